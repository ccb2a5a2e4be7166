"""What counts as a secret (DESIGN 7b), through the CLI: plain values stay readable, every real
secret is masked in every artifact, whatever form it takes on the way."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Done, Scenario, complete, run_all
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER
from tests.fakes.model_server import reply

NAMED_SECRET = "named-SEEDED-5e1f0a77"
"""The literal value of an `envs` entry whose name says TOKEN."""
QUOTED_SECRET = 'quo"ted\\SEEDED-9c2b'
"""A value listed under `secrets:`; JSON writes it escaped (`quo\\"ted\\\\...`)."""
PIN = "482913"
"""A declared secret shorter than 8 characters: masked only where it stands alone."""
STDERR_SECRET = "stderr-SEEDED-77d1e0b3"
"""The key a failing server prints on stderr before it dies."""

PLAIN_TASK = {
    "prompt": "Run pytest on test_x.py and tell me the outcome.",
    "secrets": ["E2E_QUOTED", "E2E_PIN"],
    "extensions": {
        "probe": {
            "type": "stdio",
            "cmd": sys.executable,
            "args": [str(PROBE_SERVER), "--name", "probe"],
            "envs": {
                "MODE": "test",
                "PROBE_TOKEN": NAMED_SECRET,
                "QUOTED": "${E2E_QUOTED}",
            },
        }
    },
}
SAID = f"I ran pytest test_x.py with pin {PIN} (not 9{PIN}7) and {NAMED_SECRET}."
PLAIN_STEPS = [
    # One character per stream chunk: the secret reaches the runner in pieces.
    reply(SAID + "\n<environment>\n</environment>", chunks=len(SAID) + 30),
    complete(f"pytest passed for test_x.py; pin {PIN}"),
]

FAILING_SERVER = (
    "import os, sys; sys.stderr.write('ModuleNotFoundError: key ' + os.environ['SVC_API_KEY']"
    " + '\\n'); sys.exit(3)"
)
STDERR_TASK = {
    "prompt": "Use the service.",
    "extensions": {
        "svc": {
            "type": "stdio",
            "cmd": sys.executable,
            "args": ["-c", FAILING_SERVER],
            "envs": {"SVC_API_KEY": STDERR_SECRET},
        }
    },
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(
        {
            "plain": Scenario(
                task=PLAIN_TASK,
                steps=PLAIN_STEPS,
                env={"E2E_QUOTED": QUOTED_SECRET, "E2E_PIN": PIN},
            ),
            "stderr": Scenario(task=STDERR_TASK, steps=[complete()]),
        },
        module_dir,
    )


def everything(done: Done, but: str = "\0") -> str:
    files = [p for p in sorted(done.out.rglob("*")) if p.is_file() and but not in p.parts]
    parts = [p.read_text(encoding="utf-8") for p in files]
    return "\n".join([*parts, done.stdout, done.stderr])


def test_a_plain_value_is_not_masked_anywhere(runs: dict[str, Done]) -> None:
    done = runs["plain"]
    assert done.code == 0, done.explain()
    text = everything(done)
    assert "py***" not in text and "***_x.py" not in text
    assert done.task()["result"] == "pytest passed for test_x.py; pin ***"
    prompt_files = list((done.out / "prompts").glob("*"))
    assert prompt_files and "test" in prompt_files[0].read_text(encoding="utf-8")
    contents = [e["content"] for e in done.events("message")]
    assert "Run pytest on test_x.py" in contents[0]
    assert f"pin *** (not 9{PIN}7) and ***." in contents[1]


def test_every_secret_is_masked_raw_json_escaped_and_split_across_chunks(
    runs: dict[str, Done],
) -> None:
    done = runs["plain"]
    (call,) = done.events("tool_call")
    assert "***" in call["result"] and "MODE" in call["result"]
    # The model really received them (the tool result is JSON: the quoted one came escaped).
    sent = str(done.requests[-1].body)
    assert NAMED_SECRET in sent
    text = everything(done)
    for form in (NAMED_SECRET, QUOTED_SECRET, json.dumps(QUOTED_SECRET)[1:-1]):
        assert form not in text
    assert f" {PIN}" not in text and f"9{PIN}7" in text


def test_a_short_declared_secret_is_warned_about_once_by_name(runs: dict[str, Done]) -> None:
    done = runs["plain"]
    warnings = [line for line in done.stderr.splitlines() if "E2E_PIN" in line]
    assert len(warnings) == 1, done.stderr
    assert "stands alone" in warnings[0] and PIN not in warnings[0]


def test_a_server_stderr_tail_quoted_in_an_error_is_masked(runs: dict[str, Done]) -> None:
    done = runs["stderr"]
    assert done.code == 4, done.explain()
    assert "ModuleNotFoundError" in done.task()["reason"], done.task()
    # The server's raw stderr file (OUT/mcp-logs) is issue 14's (hostile-run); every report is here.
    text = everything(done, but="mcp-logs")
    assert STDERR_SECRET not in text
    assert "key ***" in done.task()["reason"]
