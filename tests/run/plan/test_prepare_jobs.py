"""Making each task's model: tasks on the same model share a provider that says it may be shared."""

from __future__ import annotations

from pathlib import Path

from runner.run.plan import prepare_jobs
from runner.task.loader import load_tasks
from tests.conftest import REPO
from tests.llm.conftest import make_settings

REPLAY = REPO / "examples" / "sessions" / "hello.jsonl"


def test_tasks_on_one_sdk_model_share_its_client_and_replay_tasks_do_not(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "tasks:\n"
        "  - {name: a, prompt: x, model: openai:gpt-4.1}\n"
        "  - {name: b, prompt: y, model: openai:gpt-4.1}\n"
        "  - {name: c, prompt: z, model: anthropic:claude-sonnet-4-5}\n"
        f"  - {{name: d, prompt: w, model: 'replay:{REPLAY}'}}\n"
        f"  - {{name: e, prompt: v, model: 'replay:{REPLAY}'}}\n",
        encoding="utf-8",
    )
    settings = make_settings(anthropic_api_key="sk-ant-test", openai_api_key="sk-test-openai")
    a, b, c, d, e = (job.llm for job in prepare_jobs(load_tasks([path]), settings, None))
    assert a is b
    assert c is not a and c.provider == "anthropic"
    # A replay plays its recording from the start for each task: never shared.
    assert d is not e
