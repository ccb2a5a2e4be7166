"""The whole system prompt, section order included, pinned by a golden file.

Regenerate after an intended change with: UPDATE_GOLDEN=1 pytest tests/prompt/test_golden_prompt.py
"""

from __future__ import annotations

import os
from pathlib import Path

from runner.prompt import Budgeting, HostFacts, build_sections, render_sections
from runner.toolcall.spec import ToolSpec

GOLDEN = Path(__file__).parent / "golden" / "system-prompt.md"
FACTS = HostFacts(
    os="Linux 6.1 (x86_64)", shell="/bin/sh", user="ci", time="2026-01-01T00:00:00+00:00"
)
READ_FILE = ToolSpec(
    "read_file",
    "Read a file with line numbers.",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path"},
            "start_line": {"type": "integer"},
        },
        "required": ["path"],
    },
    server="workspace",
)

BUDGETING = Budgeting(
    max_turns=40, max_cost_usd=2.0, timeout_s=1200, check="pytest -q tests/", check_retries=2
)

ORDER = [
    "ROLE",
    "OBJECTIVE",
    "RULES",
    "EXTRA",
    "STYLE",
    "SYSTEM INFORMATION",
    "WORKSPACE FILES",
    "PROJECT CONTEXT",
    "BUDGET AND CHECK",
    "MCP SERVERS",
    "TOOL USE",
    "TOOLS",
]


def project(tmp_path: Path) -> tuple[Path, Path]:
    workdir = tmp_path / "project"
    workdir.mkdir()
    (workdir / "AGENTS.md").write_text("Use make test.\n", encoding="utf-8")
    (workdir / "main.py").write_text("print('hi')\n", encoding="utf-8")
    extra = tmp_path / "extra-prompts"
    extra.mkdir()
    (extra / "90-EXTRA.md").write_text("An extra section.\n", encoding="utf-8")
    return workdir, extra


def build(tmp_path: Path, renderer):
    workdir, extra = project(tmp_path)
    return renderer(
        workdir=workdir,
        prompt_dirs=[extra],
        inline_sections={"STYLE": "Be brief."},
        servers={"workspace": [READ_FILE]},
        tools=[READ_FILE],
        facts=FACTS,
        budgeting=BUDGETING,
    ), workdir


def test_sections_come_in_the_documented_order(tmp_path):
    sections, _ = build(tmp_path, build_sections)
    assert [s.title for s in sections] == ORDER


def test_the_system_prompt_matches_the_golden_file(tmp_path):
    sections, workdir = build(tmp_path, build_sections)
    text = render_sections(sections)
    text = text.replace(str(workdir), "<WORKDIR>")
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")


NATIVE_GOLDEN = Path(__file__).parent / "golden" / "system-prompt-native.md"


def test_the_native_system_prompt_matches_its_golden_file_and_says_nothing_about_xml(tmp_path):
    workdir, extra = project(tmp_path)
    sections = build_sections(
        workdir=workdir,
        prompt_dirs=[extra],
        inline_sections={"STYLE": "Be brief."},
        servers={"workspace": [READ_FILE]},
        tools=[READ_FILE],
        facts=FACTS,
        budgeting=BUDGETING,
        native=True,
    )
    assert [s.title for s in sections] == [t for t in ORDER if t != "TOOLS"]
    text = render_sections(sections).replace(str(workdir), "<WORKDIR>")
    if os.environ.get("UPDATE_GOLDEN"):
        NATIVE_GOLDEN.write_text(text, encoding="utf-8")
    assert text == NATIVE_GOLDEN.read_text(encoding="utf-8")
    tool_use = text.split("# TOOL USE", 1)[1]
    assert "XML" not in tool_use and "<" not in tool_use
    assert len(tool_use) < 800
