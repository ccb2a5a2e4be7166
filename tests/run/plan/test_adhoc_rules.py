"""`run -p`'s task file (runner.run.plan.adhoc), each rule pinned: a workdir inside the
repository that holds --out (the workdir at its root, or below it) is taken; --out where no
file can be written is a usage error that says why; placeholders stay text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from runner.errors import ConfigError
from runner.run.plan import PromptTask, load_prompt_task
from runner.settings import Settings


@pytest.mark.parametrize("workdir", [".", "src", "src/deep"])
def test_a_workdir_inside_the_repository_that_holds_out_is_taken(
    tmp_path: Path, workdir: str
) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    source = PromptTask("hi", workdir=repo / workdir)
    [task] = load_prompt_task(source, {}, Settings(), repo / "agent-runs")
    assert task.workdir == (repo / workdir).resolve()


def test_out_where_no_file_can_be_written_is_a_usage_error_saying_why(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "tasks").write_text("a file where a folder goes", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_prompt_task(PromptTask("hi", workdir=tmp_path), {}, Settings(), tmp_path / "out")
    text = str(refused.value)
    assert text.startswith(f"--out {tmp_path / 'out'}: cannot write the prompt's task file")
    assert text.endswith(": Not a directory") or text.endswith(": File exists"), text


def test_each_placeholder_is_declared_as_itself(tmp_path: Path) -> None:
    source = PromptTask("Fix {{ issue }} and {{other.key}}.", name="p", workdir=tmp_path)
    [task] = load_prompt_task(source, {}, Settings(), tmp_path / "out")
    written = yaml.safe_load((tmp_path / "out" / "tasks" / "p.yaml").read_text(encoding="utf-8"))
    assert written["params"] == {"issue": "{{ issue }}", "other.key": "{{other.key}}"}
    assert task.prompt == "Fix {{ issue }} and {{other.key}}."


@pytest.mark.parametrize("name", ["v1.2", "fix_it", "a-b", "A9", "x" * 100])
def test_every_character_a_name_may_hold_is_taken(tmp_path: Path, name: str) -> None:
    [task] = load_prompt_task(
        PromptTask("hi", name=name, workdir=tmp_path), {}, Settings(), tmp_path
    )
    assert task.name == name


def test_a_missing_workdir_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--workdir .*gone: no such folder"):
        load_prompt_task(PromptTask("hi", workdir=tmp_path / "gone"), {}, Settings(), tmp_path)


def test_the_task_file_reads_as_written_keys_in_order_and_text_as_is(tmp_path: Path) -> None:
    source = PromptTask("Répare {{ x }} — vite.", name="p", workdir=tmp_path)
    load_prompt_task(source, {}, Settings(), tmp_path / "out")
    text = (tmp_path / "out" / "tasks" / "p.yaml").read_text(encoding="utf-8")
    keys = [line.split(":", 1)[0] for line in text.splitlines() if not line.startswith(" ")]
    assert keys == ["name", "description", "prompt", "workdir", "params"]
    assert "Répare {{ x }} — vite." in text


@pytest.mark.parametrize("out", [".", "agent-runs"])
def test_a_workdir_outside_the_repository_holding_out_is_named_with_both(
    tmp_path: Path, out: str
) -> None:
    """--out inside the repository, or the repository's own folder: the message names the
    workdir, the repository and --out."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with pytest.raises(ConfigError) as refused:
        load_prompt_task(PromptTask("hi", workdir=elsewhere), {}, Settings(), repo / out)
    assert str(refused.value).startswith(
        f"--workdir {elsewhere.resolve()} is outside the git repository {repo.resolve()} "
        f"that holds --out {repo / out}; "
    )
