"""Static prompt sections: one file per section, the file name is the title (DESIGN section 4)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ConfigError

__all__ = ["REQUIRED_TITLE", "Section", "default_prompts_dir", "load_sections", "render_sections"]

REQUIRED_TITLE = "RULES"
_ORDER_PREFIX = re.compile(r"^(\d+)-")
_UNORDERED = 10**6  # files without an `NN-` prefix come after every numbered one


@dataclass(frozen=True)
class Section:
    """One `# TITLE` section of the system prompt."""

    title: str
    text: str
    source: str = ""
    """Where it came from: a file path, `task` for inline sections, or `generated`."""


def default_prompts_dir() -> Path:
    """The folder of the default sections shipped with the runner (`prompts/` in the repo)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "_prompts"  # where a built wheel puts prompts/ (see pyproject.toml)
    return installed if installed.is_dir() else package.parent / "prompts"


def _title_and_order(path: Path) -> tuple[str, int]:
    match = _ORDER_PREFIX.match(path.stem)
    if match:
        return path.stem[match.end() :], int(match.group(1))
    return path.stem, _UNORDERED


def load_sections(
    folders: Iterable[Path], inline: Mapping[str, str] | None = None
) -> list[Section]:
    """Sections from `folders` in order, then `inline` ones; a later same title replaces the text.

    A replaced section keeps its place; new sections are ordered by their `NN-` prefix, then by the
    order of the folders, then by title. A `RULES` section is required.
    """
    by_title: dict[str, tuple[tuple[int, int, str], Section]] = {}
    for folder_index, folder in enumerate(folders):
        if not folder.is_dir():
            raise ConfigError(f"{folder}: prompt section folder not found (check `prompts:`)")
        for path in sorted(folder.iterdir()):
            if path.name.startswith(".") or not path.is_file():
                continue
            title, order = _title_and_order(path)
            text = path.read_text(encoding="utf-8").strip()
            _put(by_title, Section(title, text, str(path)), (order, folder_index, title))
    for title, text in (inline or {}).items():
        _put(by_title, Section(title, text.strip(), "task"), (_UNORDERED, 10**6, title))
    sections = [section for _, section in sorted(by_title.values(), key=lambda item: item[0])]
    if not any(s.title.upper() == REQUIRED_TITLE for s in sections):
        raise ConfigError(
            f"no {REQUIRED_TITLE} section: add a file named {REQUIRED_TITLE}.md (or NN-"
            f"{REQUIRED_TITLE}.md) to a prompts folder; it holds the agent's base rules"
        )
    return sections


def _put(
    by_title: dict[str, tuple[tuple[int, int, str], Section]],
    section: Section,
    order: tuple[int, int, str],
) -> None:
    key = section.title.upper()
    if key in by_title:
        order = by_title[key][0]  # an override keeps the place of the section it replaces
        section = Section(by_title[key][1].title, section.text, section.source)
    by_title[key] = (order, section)


def render_sections(sections: Iterable[Section]) -> str:
    """The sections as `# TITLE` blocks separated by blank lines."""
    return "\n\n".join(f"# {s.title}\n\n{s.text}".rstrip() for s in sections) + "\n"
