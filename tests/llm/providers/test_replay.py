"""The replay provider plays a recorded session log back, exactly and in order."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ConfigError, ProviderError
from runner.llm.base import Message, Reply
from runner.llm.providers.openai import OpenAIChat
from runner.llm.registry import create_llm
from tests.fakes.model_server import FakeModelServer, reply
from tests.llm.conftest import make_settings

pytestmark = pytest.mark.anyio

HEADER = {"type": "header", "version": 1, "session_id": "s1", "model": "openai:gpt-4.1"}


def write_log(path: Path, records: list[dict[str, Any]], tail: str = "") -> Path:
    lines = [json.dumps(record) for record in records]
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
    return path


def assistant(content: str, turn: int) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": content, "turn": turn}


def model_call(**usage: int) -> dict[str, Any]:
    return {"type": "model_call", "usage": usage, "stop_reason": "stop", "latency_s": 1.5}


async def test_replay_reproduces_a_recorded_session_exactly(
    server: FakeModelServer, tmp_path: Path
) -> None:
    server.push(
        reply("<read_file><path>a.py</path></read_file>", input_tokens=50, output_tokens=9),
        reply("Done: all good.", input_tokens=80, cache_read_tokens=20, output_tokens=4),
    )
    live = OpenAIChat("gpt-4.1", make_settings(server))
    history = [Message("user", "Fix a.py")]
    records: list[dict[str, Any]] = [HEADER, {"type": "message", "role": "user", "turn": 0}]
    recorded: list[Reply] = []
    for turn in (1, 2):
        result = await live.complete("SYSTEM", history)
        recorded.append(result)
        records += [assistant(result.text, turn), model_call(**_counts(result))]
        history += [Message("assistant", result.text), Message("user", "tool result")]
    await live.aclose()
    log = write_log(tmp_path / "session.jsonl", records)

    replay = create_llm(f"replay:{log}", make_settings())
    replayed = [await replay.complete("SYSTEM", history[: 2 * i + 1]) for i in range(2)]

    assert [r.text for r in replayed] == [r.text for r in recorded]
    assert [r.usage for r in replayed] == [r.usage for r in recorded]
    assert replay.provider == "replay"
    assert replay.model == "openai:gpt-4.1"


def _counts(result: Reply) -> dict[str, int]:
    usage = asdict(result.usage)
    usage.pop("estimated")
    return usage


async def test_running_out_of_recorded_messages_fails_clearly(tmp_path: Path) -> None:
    log = write_log(tmp_path / "s.jsonl", [HEADER, assistant("one", 1), assistant("two", 2)])
    replay = create_llm(f"replay:{log}", make_settings())
    await replay.complete("s", [Message("user", "go")])
    await replay.complete("s", [Message("user", "go")])

    with pytest.raises(ProviderError) as raised:
        await replay.complete("s", [Message("user", "go")])

    assert str(raised.value) == (
        f"replay log {log} has only 2 assistant messages; the session asked for message 3"
    )


async def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    records = [HEADER, assistant("kept", 1), model_call(input_tokens=3, output_tokens=1)]
    log = write_log(tmp_path / "s.jsonl", records, tail='{"type": "message", "role": "assis')

    replay = create_llm(f"replay:{log}", make_settings())

    assert (await replay.complete("s", [Message("user", "go")])).text == "kept"
    with pytest.raises(ProviderError, match="has only 1 assistant messages"):
        await replay.complete("s", [Message("user", "go")])


async def test_last_line_torn_inside_a_character_is_ignored(tmp_path: Path) -> None:
    log = write_log(tmp_path / "s.jsonl", [HEADER, assistant("kept", 1)])
    with log.open("ab") as file:
        file.write('{"type": "message", "content": "caf\u00e9'.encode()[:-1])

    replay = create_llm(f"replay:{log}", make_settings())

    assert (await replay.complete("s", [Message("user", "go")])).text == "kept"


async def test_an_artifacts_folder_with_one_session_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    write_log(tmp_path / "sessions" / "abc.jsonl", [HEADER, assistant("from artifacts", 1)])

    replay = create_llm(f"replay:{tmp_path}", make_settings())

    assert (await replay.complete("s", [Message("user", "x")])).text == "from artifacts"


def test_torn_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    log.write_text(json.dumps(HEADER) + "\n{torn\n" + json.dumps(assistant("x", 1)) + "\n")

    with pytest.raises(ConfigError, match=r"s\.jsonl:2: not valid JSON"):
        create_llm(f"replay:{log}", make_settings())


async def test_usage_is_estimated_without_a_model_call_event(tmp_path: Path) -> None:
    log = write_log(tmp_path / "s.jsonl", [HEADER, assistant("abcdefgh", 1)])
    replay = create_llm(f"replay:{log}", make_settings())

    usage = (await replay.complete("s", [Message("user", "go")])).usage

    assert usage.estimated
    assert usage.output_tokens == 2


async def test_only_assistant_messages_are_played(tmp_path: Path) -> None:
    records = [
        HEADER,
        {"type": "message", "role": "user", "content": "task", "turn": 0},
        assistant("first", 1),
        {"type": "tool_call", "tool": "read_file", "result": "..."},
        {"type": "message", "role": "user", "content": "result", "turn": 1},
        assistant("second", 2),
        {"type": "end", "status": "passed"},
    ]
    replay = create_llm(f"replay:{write_log(tmp_path / 's.jsonl', records)}", make_settings())

    texts = [(await replay.complete("s", [Message("user", "x")])).text for _ in range(2)]

    assert texts == ["first", "second"]


async def test_a_folder_with_one_log_is_accepted(tmp_path: Path) -> None:
    write_log(tmp_path / "only.jsonl", [HEADER, assistant("from folder", 1)])

    replay = create_llm(f"replay:{tmp_path}", make_settings())

    assert (await replay.complete("s", [Message("user", "x")])).text == "from folder"


def test_a_folder_with_several_logs_is_refused(tmp_path: Path) -> None:
    write_log(tmp_path / "a.jsonl", [HEADER])
    write_log(tmp_path / "b.jsonl", [HEADER])

    with pytest.raises(ConfigError, match=r"exactly one \*\.jsonl .*found: a\.jsonl, b\.jsonl"):
        create_llm(f"replay:{tmp_path}", make_settings())


def test_a_file_without_header_is_refused(tmp_path: Path) -> None:
    log = write_log(tmp_path / "s.jsonl", [assistant("x", 1)])

    with pytest.raises(ConfigError, match="not a session log"):
        create_llm(f"replay:{log}", make_settings())


def test_a_missing_log_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        create_llm(f"replay:{tmp_path / 'nope.jsonl'}", make_settings())
