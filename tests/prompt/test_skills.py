"""Skills: discovery, front matter checks, and the confinement of load_skill's files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.errors import Problem
from runner.prompt import discover_skills, skills_section
from runner.prompt.skills import MAX_SKILL_BYTES
from runner.workspace import WorkspaceError


def write_skill(folder: Path, name: str, meta: str | None = None, body: str = "Body.") -> Path:
    skill = folder / name
    skill.mkdir(parents=True)
    front = meta if meta is not None else f"name: {name}\ndescription: Does {name}."
    (skill / "SKILL.md").write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return skill


def test_declared_folders_come_first_then_the_workdirs_agents_skills(tmp_path: Path) -> None:
    write_skill(tmp_path / "declared", "alpha")
    write_skill(tmp_path / "work" / ".agents" / "skills", "beta")
    skills, problems = discover_skills([tmp_path / "declared"], tmp_path / "work")
    assert problems == []
    assert [(s.name, s.description, s.body) for s in skills] == [
        ("alpha", "Does alpha.", "Body."),
        ("beta", "Does beta.", "Body."),
    ]


def test_the_section_lists_names_and_descriptions_only(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha", body="SECRET STEPS")
    skills, _ = discover_skills([tmp_path], tmp_path / "none")
    section = skills_section(skills)
    assert "- alpha: Does alpha." in section.text and "SECRET STEPS" not in section.text


@pytest.mark.parametrize(
    ("meta", "line", "message"),
    [
        ("name: alpha", 1, "`description:` is missing"),
        ("name: Alpha\ndescription: x", 2, "lower-case"),
        ("name: other\ndescription: x", 2, "must match the skill's folder name"),
        ("description: x\nname: alpha\nbad: [1", 4, "not valid YAML"),
        ("- a list", 2, "must be a mapping"),
    ],
)
def test_bad_front_matter_is_a_problem_at_its_line(
    tmp_path: Path, meta: str, line: int, message: str
) -> None:
    write_skill(tmp_path, "alpha", meta)
    skills, problems = discover_skills([tmp_path], tmp_path / "none")
    assert skills == []
    (problem,) = problems
    assert problem.line == line and message in problem.message
    assert str(problem).startswith(f"{tmp_path / 'alpha' / 'SKILL.md'}:{line}:")


def test_a_missing_declared_folder_is_a_problem_but_a_missing_workdir_folder_is_not(
    tmp_path: Path,
) -> None:
    _, problems = discover_skills([tmp_path / "nowhere"], tmp_path)
    (problem,) = problems
    assert "does not exist" in problem.message


def test_a_skill_folder_linking_out_of_its_source_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path / "outside", "evil")
    source = tmp_path / "declared"
    source.mkdir(parents=True)
    (source / "evil").symlink_to(tmp_path / "outside" / "evil")
    skills, problems = discover_skills([source], tmp_path / "work")
    assert skills == [] and "links out of" in problems[0].message


def test_a_fifo_or_an_oversized_skill_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "piped"
    fifo.mkdir()
    os.mkfifo(fifo / "SKILL.md")
    big = write_skill(tmp_path, "big")
    (big / "SKILL.md").write_text("---\n" + "x" * (MAX_SKILL_BYTES + 1), encoding="utf-8")
    skills, problems = discover_skills([tmp_path], tmp_path / "none")
    assert skills == []
    messages = sorted(p.message for p in problems)
    assert "over" in messages[0] and "not a regular file" in messages[1]


def test_load_skill_reads_files_confined_to_the_skill_folder(tmp_path: Path) -> None:
    skill_dir = write_skill(tmp_path / "skills", "alpha")
    (skill_dir / "ref.md").write_text("REFERENCE", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("SECRET", encoding="utf-8")
    (skill_dir / "link.txt").symlink_to(tmp_path / "secret.txt")
    (skill_dir / "blob.bin").write_bytes(b"\x00\x01")
    (skill,) = discover_skills([tmp_path / "skills"], tmp_path / "none")[0]
    assert skill.read("ref.md") == "REFERENCE"
    assert "ref.md" in skill.files()
    for escape in ("../../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        with pytest.raises(WorkspaceError, match="outside"):
            skill.read(escape)
    with pytest.raises(WorkspaceError, match="binary"):
        skill.read("blob.bin")
    with pytest.raises(WorkspaceError, match="is a folder"):
        skill.read(".")


def test_a_workdir_skills_folder_linking_out_of_the_workdir_is_refused(tmp_path: Path) -> None:
    write_skill(tmp_path / "elsewhere" / "skills", "alpha")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / ".agents").symlink_to(tmp_path / "elsewhere")
    skipped: list[Problem] = []
    skills, problems = discover_skills([], tmp_path / "work", skipped)
    assert skills == [] and problems == []
    assert "links out of the workdir" in skipped[0].message


def test_a_symlinked_workdir_skill_is_skipped_and_the_others_stay(tmp_path: Path) -> None:
    skills_dir = tmp_path / "work" / ".agents" / "skills"
    write_skill(skills_dir, "alpha")
    write_skill(tmp_path / "elsewhere", "beta")
    (skills_dir / "beta").symlink_to(tmp_path / "elsewhere" / "beta")
    skipped: list[Problem] = []
    skills, problems = discover_skills([], tmp_path / "work", skipped)
    assert [s.name for s in skills] == ["alpha"] and problems == []
    assert "links out of" in skipped[0].message and "beta" in skipped[0].path
