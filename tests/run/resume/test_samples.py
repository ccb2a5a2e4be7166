"""runner.run.resume.samples: a resumed sample stays that sample; a header's sample is checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError
from runner.run.resume.samples import with_logged_sample
from runner.task import Task, load_tasks


def task(tmp_path: Path) -> Task:
    (tmp_path / "t.yaml").write_text("name: t\nprompt: p\n", encoding="utf-8")
    (only,) = load_tasks([tmp_path / "t.yaml"])
    return only


def test_a_resumed_sample_keeps_its_index_and_k(tmp_path: Path) -> None:
    resumed = with_logged_sample(task(tmp_path), {"sample": 3, "of": 5}, tmp_path / "x.jsonl")
    assert (resumed.sample, resumed.of, resumed.label) == (3, 5, "t [3/5]")
    assert with_logged_sample(task(tmp_path), {}, tmp_path / "x.jsonl").of == 0


@pytest.mark.parametrize(
    "header",
    [
        {"sample": 6, "of": 5},
        {"sample": 0, "of": 5},
        {"sample": "1", "of": 5},
        {"sample": True, "of": 5},
        {"sample": 1},
        {"sample": 1, "of": 10**6},
    ],
)
def test_a_header_whose_sample_is_not_one_refuses_the_resume(
    tmp_path: Path, header: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match="edited or damaged"):
        with_logged_sample(task(tmp_path), header, tmp_path / "x.jsonl")
