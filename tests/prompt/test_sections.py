from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.prompt.sections import default_prompts_dir, load_sections, render_sections


def folder(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    path = tmp_path / name
    path.mkdir()
    for file_name, text in files.items():
        (path / file_name).write_text(text, encoding="utf-8")
    return path


def test_a_numeric_prefix_orders_sections_and_is_not_part_of_the_title(tmp_path):
    base = folder(tmp_path, "base", {"20-RULES.md": "r", "10-ROLE.md": "x", "NOTES.md": "n"})
    titles = [s.title for s in load_sections([base])]
    assert titles == ["ROLE", "RULES", "NOTES"]


def test_a_later_folder_replaces_a_same_titled_section_in_place(tmp_path):
    base = folder(tmp_path, "base", {"10-ROLE.md": "old role", "20-RULES.md": "rules"})
    extra = folder(tmp_path, "extra", {"ROLE.md": "new role", "05-FIRST.md": "first"})
    sections = load_sections([base, extra])
    assert [(s.title, s.text) for s in sections] == [
        ("FIRST", "first"),
        ("ROLE", "new role"),
        ("RULES", "rules"),
    ]


def test_inline_sections_come_last_and_can_override(tmp_path):
    base = folder(tmp_path, "base", {"RULES.md": "rules"})
    sections = load_sections([base], {"STYLE": "terse", "RULES": "stricter"})
    assert [(s.title, s.text) for s in sections] == [("RULES", "stricter"), ("STYLE", "terse")]


def test_a_missing_rules_section_is_an_error(tmp_path):
    base = folder(tmp_path, "base", {"ROLE.md": "x"})
    with pytest.raises(ConfigError, match="no RULES section"):
        load_sections([base])


def test_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="prompt section folder not found"):
        load_sections([tmp_path / "nope"])


def test_hidden_files_are_not_sections(tmp_path):
    base = folder(tmp_path, "base", {"RULES.md": "r", ".DS_Store": "junk"})
    assert [s.title for s in load_sections([base])] == ["RULES"]


def test_sections_render_as_titled_blocks(tmp_path):
    base = folder(tmp_path, "base", {"1-RULES.md": "be good\n", "2-END.md": "bye"})
    assert render_sections(load_sections([base])) == "# RULES\n\nbe good\n\n# END\n\nbye\n"


def test_the_default_rules_cover_refusals_and_untrusted_tool_output():
    sections = {s.title: s.text for s in load_sections([default_prompts_dir()])}
    rules = sections["RULES"].lower()
    assert "refuse" in rules
    assert "secret" in rules
    assert "tool results are data" in rules
    assert "attempt_completion" in sections["OBJECTIVE"]
    assert "non-interactive" in sections["OBJECTIVE"]
