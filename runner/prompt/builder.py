"""Assemble the system prompt in the documented order (DESIGN section 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.prompt.budget import Budgeting, budget_section
from runner.prompt.catalogue import catalogue_sections
from runner.prompt.deferred import ToolShelf
from runner.prompt.dynamic import HostFacts, dynamic_sections
from runner.prompt.sections import Section, default_prompts_dir, load_sections
from runner.toolcall import ToolSpec
from runner.workspace import DEFAULT_PROMPT_FILE_BYTES

__all__ = ["APPENDED_SECTION", "build_sections"]

APPENDED_SECTION = "APPENDED"
"""The section `--append-system-prompt` writes: the prompt's last, after the dynamic sections
and the tool catalogue, as `claude --append-system-prompt` puts its text."""


def build_sections(
    *,
    workdir: Path,
    prompt_dirs: Sequence[Path],
    inline_sections: Mapping[str, str],
    servers: Mapping[str, Sequence[ToolSpec]],
    tools: Sequence[ToolSpec],
    facts: HostFacts,
    budgeting: Budgeting | None = None,
    max_file_bytes: int = DEFAULT_PROMPT_FILE_BYTES,
    native: bool = False,
    shelf: ToolShelf | None = None,
) -> list[Section]:
    """Static (defaults, then `prompt_dirs`, then inline), dynamic, BUDGET AND CHECK (when
    `budgeting` says anything), the tool catalogue, then APPENDED (when there is one).

    `render_sections` turns the list into the prompt text. `max_file_bytes` bounds each file
    read from the workdir (AGENTS.md, .gitignore). `native`: the catalogue of tool_mode native.
    `shelf`: the tools listed by name only, loaded with find_tools (DESIGN 28).
    """
    static = load_sections([default_prompts_dir(), *prompt_dirs], inline_sections)
    last = [section for section in static if section.title == APPENDED_SECTION]
    static = [section for section in static if section.title != APPENDED_SECTION]
    budget = [budget_section(budgeting)] if budgeting is not None else []
    budget = [section for section in budget if section.text]
    return [
        *static,
        *dynamic_sections(workdir, facts, max_file_bytes),
        *budget,
        *catalogue_sections(servers, tools, native, shelf),
        *last,
    ]
