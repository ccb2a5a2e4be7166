"""`run -p` (runner.run.plan.adhoc): the prompt becomes a task file under --out, loaded like any."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from runner.errors import ConfigError
from runner.run.plan import PromptTask, load_prompt_task
from runner.settings import Settings

SECRET = "sk-adhoc-secret-0123456789"


def test_the_task_file_masks_a_secret_and_the_model_gets_the_prompt_as_written(
    tmp_path: Path,
) -> None:
    (tmp_path / "w").mkdir()
    source = PromptTask(f"Use {SECRET} for {{{{ x }}}}.", name="p-1", workdir=tmp_path / "w")
    settings = Settings(openai_api_key=SECRET)
    [task] = load_prompt_task(source, {}, settings, tmp_path / "out")
    written = (tmp_path / "out" / "tasks" / "p-1.yaml").read_text(encoding="utf-8")
    assert SECRET not in written
    assert yaml.safe_load(written)["workdir"] == "../../w"
    assert task.prompt == source.prompt  # `{{ x }}` stays text
    assert (task.name, task.workdir, task.file) == (
        "p-1",
        (tmp_path / "w").resolve(),
        (tmp_path / "out" / "tasks" / "p-1.yaml").resolve(),
    )


def test_a_workdir_outside_the_repository_that_holds_out_is_refused_with_the_fix(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    with pytest.raises(ConfigError, match="pass an --out inside the workdir's repository"):
        load_prompt_task(PromptTask("hi", workdir=tmp_path), {}, Settings(), repo / "out")


@pytest.mark.parametrize("name", ["../up", "a b", ".hidden", ""])
def test_a_name_that_cannot_name_a_file_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="--name"):
        load_prompt_task(PromptTask("hi", name=name, workdir=tmp_path), {}, Settings(), tmp_path)
