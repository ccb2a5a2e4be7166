"""Sections generated at session start: SYSTEM INFORMATION, WORKSPACE FILES, PROJECT CONTEXT."""

from __future__ import annotations

import getpass
import platform
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runner.prompt.escape import inline_name
from runner.prompt.sections import Section
from runner.workspace import DEFAULT_PROMPT_FILE_BYTES, list_tree, read_confined

__all__ = ["HostFacts", "dynamic_sections", "host_facts"]

WORKSPACE_FILES_LIMIT = 200
PROJECT_CONTEXT_FILE = "AGENTS.md"
PROJECT_CONTEXT_LIMIT = 20_000  # characters; AGENTS.md is guidance, not a place for whole docs


@dataclass(frozen=True)
class HostFacts:
    """What the agent is told about the machine; passed in so tests can pin it."""

    os: str
    shell: str
    user: str
    time: str


def host_facts(env: dict[str, str]) -> HostFacts:
    """Facts about this machine, now."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = env.get("USER", "unknown")
    return HostFacts(
        os=f"{platform.system()} {platform.release()} ({platform.machine()})",
        # What execute_command runs commands with, whatever the user's login shell ($SHELL).
        shell="/bin/sh",
        user=user,
        time=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def dynamic_sections(
    workdir: Path, facts: HostFacts, max_file_bytes: int = DEFAULT_PROMPT_FILE_BYTES
) -> list[Section]:
    """The three generated sections; PROJECT CONTEXT only when AGENTS.md exists.

    Files of the workdir (AGENTS.md, each .gitignore) are read only when they are regular files
    inside the workdir, and at most `max_file_bytes` of each (the `prompt_file_max_bytes` setting).
    """
    sections = [_system_information(workdir, facts), _workspace_files(workdir, max_file_bytes)]
    context = _project_context(workdir, max_file_bytes)
    if context is not None:
        sections.append(context)
    return sections


def _system_information(workdir: Path, facts: HostFacts) -> Section:
    text = "\n".join(
        [
            f"OS: {facts.os}",
            f"Shell: {facts.shell}",
            f"Working directory: {workdir}",
            f"Current time: {facts.time}",
            f"User: {facts.user}",
        ]
    )
    return Section("SYSTEM INFORMATION", text, "generated")


def _workspace_files(workdir: Path, max_file_bytes: int) -> Section:
    listing = list_tree(workdir, WORKSPACE_FILES_LIMIT, max_file_bytes=max_file_bytes)
    # The working directory is named under SYSTEM INFORMATION; a long temporary path costs
    # tokens on every turn (DESIGN 28).
    lines = ["Files of the working directory (without what .gitignore ignores):", ""]
    # A name with a line break or a leading `#` is shown as a JSON string: no file name can add
    # a section to the prompt.
    lines += [inline_name(path) for path in listing.paths] or ["(empty)"]
    if listing.truncated:
        lines += [
            "",
            f"(Listing cut at {WORKSPACE_FILES_LIMIT} entries; use list_files to see the rest.)",
        ]
    return Section("WORKSPACE FILES", "\n".join(lines), "generated")


def _project_context(workdir: Path, max_file_bytes: int) -> Section | None:
    path = workdir / PROJECT_CONTEXT_FILE
    # Not `read_text`: AGENTS.md may be a symlink to /proc/self/environ, /dev/zero or a FIFO.
    read = read_confined(path, workdir, min(max_file_bytes, PROJECT_CONTEXT_LIMIT * 4 + 4))
    if read is None:
        return None
    text = read.text.strip()
    if read.truncated or len(text) > PROJECT_CONTEXT_LIMIT:
        text = text[:PROJECT_CONTEXT_LIMIT]
        text += f"\n\n(AGENTS.md cut at {len(text)} characters; read_file shows it all.)"
    intro = f"From {PROJECT_CONTEXT_FILE} in the working directory:\n\n"
    return Section("PROJECT CONTEXT", intro + text, str(path))
