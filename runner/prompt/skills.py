"""Skills (DESIGN section 14): folders of `<name>/SKILL.md`, listed in the prompt, loaded on demand.

A SKILL.md starts with YAML front matter between `---` lines (`name`, `description`; other keys
of the Agent Skills format, such as `license` or `metadata`, are allowed and ignored), then the
body. The SKILLS section lists name and description only; the `load_skill` tool returns the body,
or one file of the skill's folder. Skills come from a task's `skills:` folders and from
`.agents/skills/` in the workdir; the workdir is the repository's, so everything read from it is
bounded and confined: a folder or file whose real path leaves its source folder is refused, and
so is anything that is not a regular file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from runner.errors import Problem
from runner.prompt.sections import Section
from runner.toolcall import ToolSpec
from runner.workspace import Confinement, WorkspaceError, read_regular

__all__ = [
    "LOAD_SKILL",
    "SKILL_FILE",
    "WORKDIR_SKILLS",
    "Skill",
    "discover_skills",
    "load_skill_spec",
    "skills_section",
]

SKILL_FILE = "SKILL.md"
WORKDIR_SKILLS = Path(".agents") / "skills"
"""Where a workdir's own skills are found."""
LOAD_SKILL = "load_skill"
MAX_SKILL_BYTES = 256 * 1024
"""A SKILL.md or a file a skill loads: larger ones are refused."""
MAX_SKILLS = 100
"""Skills per task; a prompt listing more would crowd out the task."""
MAX_DESCRIPTION_CHARS = 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_LISTED_FILES = 50


@dataclass(frozen=True)
class Skill:
    """One skill: what the prompt lists, and where its files are."""

    name: str
    description: str
    folder: Path
    """The skill's folder (real path); `load_skill` reads only inside it."""
    body: str
    """SKILL.md after its front matter."""

    def read(self, file: str) -> str:
        """A file of the skill's folder, as text; WorkspaceError says why not."""
        data = _read_regular(self.folder, file)
        if b"\x00" in data[:8192]:
            raise WorkspaceError(f"{file!r} is a binary file; load_skill reads text files only")
        return data.decode("utf-8", errors="replace")

    def files(self) -> list[str]:
        """Other files of the folder (bounded), relative to it."""
        found: list[str] = []
        for base, dirs, names in os.walk(self.folder):
            dirs.sort()
            for name in sorted(names):
                rel = (Path(base) / name).relative_to(self.folder).as_posix()
                if rel != SKILL_FILE:
                    found.append(rel)
                if len(found) >= _LISTED_FILES:
                    return [*found, "..."]
        return found


def discover_skills(
    declared: Sequence[Path], workdir: Path, skipped: list[Problem] | None = None
) -> tuple[list[Skill], list[Problem]]:
    """Skills of the `declared` folders, then of the workdir's `.agents/skills`; and problems as
    `file:line` problems (a declared folder that does not exist, bad front matter, a clash).

    The workdir's skills are the repository's: a problem with one of them (a folder that links
    out, bad front matter) skips that skill and goes to `skipped` (for a warning), never to the
    problems that stop a task: a repository can switch off its own skills, not the runner
    (DESIGN 18)."""
    skills: dict[str, Skill] = {}
    problems: list[Problem] = []
    for folder in declared:
        _add_source(folder, True, workdir, skills, problems)
    _add_source(
        workdir / WORKDIR_SKILLS, False, workdir, skills, skipped if skipped is not None else []
    )
    return list(skills.values()), problems


def _add_source(
    source: Path, required: bool, workdir: Path, skills: dict[str, Skill], problems: list[Problem]
) -> None:
    """The skills of one source folder into `skills`; what is wrong into `problems`."""
    if not source.is_dir():
        if required:
            problems.append(
                Problem(
                    str(source),
                    0,
                    0,
                    "skills",
                    "the declared skill folder does not exist",
                    "create it, or fix the task's `skills:` path",
                )
            )
        return
    if not required and not source.resolve().is_relative_to(workdir.resolve()):
        problems.append(Problem(str(source), 0, 0, "", "links out of the workdir; refused"))
        return
    for skill in _skills_in(source, problems):
        first = skills.get(skill.name)
        if first is not None:
            problems.append(
                Problem(
                    str(skill.folder / SKILL_FILE),
                    1,
                    1,
                    "name",
                    f"skill {skill.name!r} is also defined in {first.folder}",
                    "give one of them another name",
                )
            )
        elif len(skills) >= MAX_SKILLS:
            problems.append(Problem(str(source), 0, 0, "", f"more than {MAX_SKILLS} skills"))
            return
        else:
            skills[skill.name] = skill


def _skills_in(source: Path, problems: list[Problem]) -> list[Skill]:
    root = source.resolve()
    found = []
    try:
        entries = sorted(source.iterdir())
    except OSError as exc:  # unreadable: the source loses its skills, nothing more
        problems.append(Problem(str(source), 0, 0, "", f"cannot list the folder ({exc.strerror})"))
        return []
    for entry in entries:
        file = entry / SKILL_FILE
        if not entry.is_dir() or not file.exists():
            continue
        folder = entry.resolve()
        if not folder.is_relative_to(root):
            problems.append(Problem(str(file), 0, 0, "", f"the skill folder links out of {source}"))
            continue
        try:
            data = _read_regular(folder, SKILL_FILE, str(file))
        except WorkspaceError as exc:
            problems.append(Problem(str(file), 0, 0, "", str(exc)))
            continue
        skill = _parse(file, folder, data.decode("utf-8", errors="replace"), problems)
        if skill is not None:
            found.append(skill)
    return found


def _read_regular(folder: Path, file: str, given: str | None = None) -> bytes:
    """`file` of the skill folder: a regular file inside it, opened beneath it (no gap between
    the check and the open for a swapped symlink to use), at most MAX_SKILL_BYTES."""
    paths = Confinement(folder)
    real = paths.resolve(file)
    hint = f" ({MAX_SKILL_BYTES // 1024} KiB); refused"
    return read_regular(given or file, real, paths.root, MAX_SKILL_BYTES, hint=hint)


def _parse(file: Path, folder: Path, text: str, problems: list[Problem]) -> Skill | None:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        problems.append(
            Problem(str(file), 1, 1, "", "a SKILL.md must start with `---` and YAML front matter")
        )
        return None
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        problems.append(Problem(str(file), 1, 1, "", "the front matter has no closing `---` line"))
        return None
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        # Where the broken value starts (an unclosed bracket is noticed only at the end).
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problems.append(Problem(str(file), line, 1, "", "the front matter is not valid YAML"))
        return None
    if not isinstance(meta, dict):
        problems.append(
            Problem(
                str(file), 2, 1, "", "the front matter must be a mapping with name and description"
            )
        )
        return None
    name, description = meta.get("name"), meta.get("description")
    line_of = _line_finder(lines[1:end])
    problem = _meta_problem(name, description, folder)
    if problem is not None:
        key, message = problem
        problems.append(Problem(str(file), line_of(key), 1, key, message))
        return None
    assert isinstance(name, str) and isinstance(description, str)
    body = "".join(lines[end + 1 :]).strip("\n")
    return Skill(name, " ".join(description.split()), folder, body)


def _meta_problem(name: object, description: object, folder: Path) -> tuple[str, str] | None:
    if not isinstance(name, str) or not name:
        return "name", "`name:` is missing or not text"
    if len(name) > 64 or not _NAME.fullmatch(name):
        return "name", f"name {name!r}: use 1-64 lower-case letters, digits and single hyphens"
    if name != folder.name:
        return "name", f"name {name!r} must match the skill's folder name {folder.name!r}"
    if not isinstance(description, str) or not description.strip():
        return "description", "`description:` is missing or not text"
    if len(description) > MAX_DESCRIPTION_CHARS:
        return "description", f"the description is over {MAX_DESCRIPTION_CHARS} characters"
    return None


def _line_finder(front: list[str]) -> Callable[[str], int]:
    def line_of(key: str) -> int:
        for number, line in enumerate(front, 2):
            if line.startswith(f"{key}:"):
                return number
        return 1

    return line_of


def skills_section(skills: Sequence[Skill]) -> Section:
    """The SKILLS section: each skill's name and description, never its body."""
    lines = [
        "Skills are instructions for particular kinds of work, kept out of this prompt until "
        f"needed. When one fits the task, call {LOAD_SKILL} with its name and follow what it "
        "says; a skill may name files of its own folder, which load_skill reads with `file`.",
        "",
        *(f"- {skill.name}: {skill.description}" for skill in skills),
    ]
    return Section("SKILLS", "\n".join(lines), "generated")


def load_skill_spec(skills: Sequence[Skill]) -> ToolSpec:
    """The runner's `load_skill` tool, offering the task's skill names."""
    return ToolSpec(
        name=LOAD_SKILL,
        description=(
            "Read a skill listed in the SKILLS section: its instructions, or with `file` one "
            "file of the skill's folder (a path relative to it)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "enum": [skill.name for skill in skills],
                    "description": "The skill's name.",
                },
                "file": {
                    "type": "string",
                    "description": "A file of the skill's folder, relative to it; omit for "
                    "the skill's instructions.",
                },
            },
            "required": ["name"],
        },
    )
