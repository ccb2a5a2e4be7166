"""The loop's side of native tool calls (DESIGN section 16): which mode a task runs in, the model
wrapped so that every request describes the tools, the calls of a reply checked like XML ones,
and the results message that answers every call of the reply by its id.

Providers must see a result for each call id (OpenAI: a `tool` message; Anthropic: a
`tool_result` block in the next user message), or they refuse the request. So each call gets one:
its result, its error, or a note that it did not run (a completion came first, the reply had too
many calls, the session was cut off before it ran).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal

from runner.errors import ConfigError
from runner.llm import LLM, Message, NativeResult, NativeTools, Reply, RetryEvent
from runner.prompt import ToolShelf
from runner.settings import ModelInfo, Settings
from runner.task import Task
from runner.toolcall import ATTEMPT_COMPLETION, CallError, ToolCall, ToolSpec, native_call

__all__ = [
    "NOT_RUN",
    "NativeModel",
    "ANSWERED",
    "answer_open_calls",
    "append_user",
    "cleared",
    "transcript_text",
    "logged_tool_mode",
    "native_fields",
    "native_items",
    "native_model",
    "native_tools_for",
    "results_message",
    "task_in_mode",
    "with_tool_mode",
]

ToolMode = Literal["xml", "native"]

NOT_RUN = (
    "Not run: an earlier call of the same reply ended the turn, or the reply had too many calls."
)
INTERRUPTED = "Not run: the session stopped before this call ran (it was cut off or ended)."
ANSWERED = "Received; the answer follows."
CLEARED_RESULT = "[Tool results of this turn were cleared to save context.]"


def _auto(llm: LLM) -> ToolMode:
    """`auto`: native for a provider with tool calling and a model the table knows to have it;
    a model missing from the table (a local server's) stays xml unless config says otherwise."""
    info: ModelInfo | None = llm.info
    native = bool(getattr(llm, "native_tools", False)) and info is not None and info.native_tools
    return "native" if native else "xml"


def task_in_mode(task: Task, mode: ToolMode) -> Task:
    """`task` with its `tool_mode` set to `mode`."""
    if task.spec.tool_mode == mode:
        return task
    spec = task.spec.model_copy(update={"tool_mode": mode})
    return Task(**{**task.__dict__, "spec": spec})


def with_tool_mode(task: Task, llm: LLM, settings: Settings) -> Task:
    """The task with the mode it runs in: `--tool-mode` over the task's, `auto` resolved, and a
    provider that dictates one (a replayed log) obeyed. Exit 2 when native cannot work."""
    required: str | None = getattr(llm, "required_tool_mode", None)
    chosen = settings.tool_mode or task.spec.tool_mode
    where = f"{task.file}:{task.line}: task {task.name!r}"
    if required is not None:
        if settings.tool_mode and settings.tool_mode not in (required, "auto"):
            raise ConfigError(
                f"{where}: --tool-mode {settings.tool_mode} does not match the replayed log, "
                f"which was written in {required} mode; drop --tool-mode"
            )
        return task_in_mode(task, "native" if required == "native" else "xml")
    if chosen == "auto":
        return task_in_mode(task, _auto(llm))
    if chosen == "native" and not getattr(llm, "native_tools", False):  # a plugin provider
        raise ConfigError(
            f"{where}: tool_mode: native needs a provider with tool calling (openai, anthropic);"
            f" {llm.provider} has none: use tool_mode: xml or auto"
        )
    return task_in_mode(task, "native" if chosen == "native" else "xml")


def logged_tool_mode(task: Task, record: Any, settings: Settings, log: Any) -> Task:
    """The task in the mode its log was written in (`tool_mode` of the header; xml for logs
    older than it). A `--tool-mode` other than that mode (or `auto`) is refused: the context
    holds calls in the log's form, which the other mode cannot send."""
    logged: ToolMode = "native" if record.header.get("tool_mode") == "native" else "xml"
    wanted = settings.tool_mode
    if wanted not in (None, "auto", logged):
        raise ConfigError(
            f"{log}: the session was written in tool_mode {logged}; it resumes in that mode, "
            f"not {wanted}: drop --tool-mode {wanted} (or pass --tool-mode {logged})"
        )
    return task_in_mode(task, logged)


def native_tools_for(task: Task, llm: LLM, tools: Sequence[ToolSpec]) -> NativeTools | None:
    """The tools a native request offers (attempt_completion last), None in xml mode."""
    if task.spec.tool_mode != "native" or not getattr(llm, "native_tools", False):
        return None
    return NativeTools((*tools, ATTEMPT_COMPLETION))


def native_model(
    task: Task, llm: LLM, tools: Sequence[ToolSpec], shelf: ToolShelf | None = None
) -> tuple[LLM, NativeTools | None]:
    """The session's model and native tools: `llm` wrapped in a `NativeModel` in native mode,
    as it is (and None) in xml mode. `shelf`: the deferred tools, left out until loaded."""
    native = native_tools_for(task, llm, tools)
    return (llm, None) if native is None else (NativeModel(llm, native, shelf), native)


class NativeModel:
    """`llm` with the task's tools on every request: calls the loop makes pass their own
    `tools`; any other (the wind-down's final report, a compaction summary) offers them with
    `tool_choice: none`, since earlier messages of the context called them."""

    def __init__(self, llm: LLM, tools: NativeTools, shelf: ToolShelf | None = None) -> None:
        self.inner = llm
        self._shelf = shelf
        self.provider = llm.provider
        self.model = llm.model
        self.info = llm.info
        self.native_tools = True
        self._idle = dataclasses.replace(tools, choice="none")

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        on_retry: Callable[[RetryEvent], None] | None = None,
        tools: NativeTools | None = None,
    ) -> Reply:
        call: Any = self.inner.complete
        if tools is None:
            idle = self._idle
            if self._shelf:  # tools still deferred stay out of these requests too
                idle = dataclasses.replace(idle, specs=tuple(self._shelf.visible(idle.specs)))
            tools = idle
        return await call(system, messages, on_retry=on_retry, tools=tools)  # type: ignore[no-any-return]


def native_items(
    reply: Reply, tools: Mapping[str, ToolSpec], unlisted: Collection[str]
) -> list[ToolCall | CallError]:
    """The reply's native calls, checked by their tools' schemas, in order."""
    return [
        native_call(call.id, call.name, call.arguments, tools, unlisted=unlisted)
        for call in reply.calls
    ]


def results_message(
    asked: Message, answers: Sequence[tuple[ToolCall | CallError, str, bool]], text: str
) -> Message:
    """The user message after `asked` (an assistant message with calls): one result per call, in
    the calls' order, those without an answer marked as not run; then `text`."""
    by_id = {item.call_id: (body, is_error) for item, body, is_error in answers}
    results = tuple(
        NativeResult(call.id, call.name, *by_id.get(call.id, (NOT_RUN, True)))
        for call in asked.calls
    )
    return Message("user", text, results=results)


def answer_open_calls(messages: Sequence[Message], text: str, why: str = INTERRUPTED) -> Message:
    """The user message to add after `messages` with `text`: when the last message is an
    assistant's with calls that got no results (the session stopped first, or its
    attempt_completion was not accepted), it answers each with `why`."""
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant" or not last.calls:
        return Message("user", text)
    error = why == INTERRUPTED
    results = tuple(NativeResult(call.id, call.name, why, error) for call in last.calls)
    return Message("user", text, results=results)


def append_user(messages: list[Message], text: str) -> dict[str, Any]:
    """Add a user message; fold it into the last one when that is a user message too, so roles
    keep alternating for providers that insist on it. The fields its `message` event carries."""
    if messages and messages[-1].role == "user":
        last = messages[-1]
        joined = f"{last.content}\n\n{text}" if last.content else text
        messages[-1] = Message("user", joined, results=last.results)
        return {}
    # Native calls the limit cut off before they ran get their answer with it (logged too).
    messages.append(answer_open_calls(messages, text))
    return native_fields(messages[-1])


def native_fields(message: Message) -> dict[str, Any]:
    """The `tool_calls`/`tool_results` of a message for the log's `message` event ({} if none)."""
    record = message.record()
    return {k: v for k, v in record.items() if k in ("tool_calls", "tool_results")}


def cleared(message: Message, placeholder: str = CLEARED_RESULT) -> Message:
    """A user message with its tool results cleared to save context: the text replaced by
    `placeholder`, each native result's content too (its id stays, so the call keeps its answer)."""
    results = tuple(dataclasses.replace(r, content=placeholder) for r in message.results)
    return Message("user", "" if results else placeholder, results=results)


def transcript_text(message: Message) -> str:
    """A message as text for a compaction summary: its text, native calls and results."""
    calls = [f"[call {call.name}] {call.arguments}" for call in message.calls]
    return "\n".join(filter(None, [message.plain().content, *calls]))
