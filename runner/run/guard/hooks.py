"""Running a task's hooks (DESIGN section 14): the common convention of CI agents.

Each hook is a shell command started through the workspace's command runner
(`runner.workspace.run_shell`: the workdir, the minimal environment of execute_command, its own
process group, killed whole at the timeout), with the event as one JSON object on stdin and
`AGENT_RUNNER_EVENT`, `AGENT_RUNNER_TOOL`, `AGENT_RUNNER_SESSION_ID` in its environment.

Exit 0 goes on; exit 2 blocks (a pre_tool call is not made, a stop refuses the completion) with
the hook's stderr as the reason; any other exit, a hook that cannot start, or a timeout is a
warning and the run goes on. Every run is a `hook` event in the session log.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from runner.task import Hook, Hooks, ToolHook
from runner.workspace import ShellRun, run_shell, shared_reaper

__all__ = ["BLOCK_EXIT_CODE", "HookLog", "HookRunner", "PreToolDecision", "stop_feedback"]

BLOCK_EXIT_CODE = 2
TAIL_CHARS = 2000
"""How much of a hook's stdout and stderr the log keeps (the end is where the news is)."""
MAX_FEEDBACK_CHARS = 8000
"""How much of a hook's output reaches the model."""
MAX_EVENT_BYTES = 1024 * 1024
"""A tool result larger than this is cut in the event a post_tool hook reads."""

Outcome = Literal["ok", "blocked", "rewrote", "warning"]


class HookLog(Protocol):
    """Where hook runs are recorded (the session log writer fits)."""

    def hook(
        self,
        *,
        event: str,
        tool: str | None,
        command: str,
        exit_code: int | None,
        timed_out: bool,
        duration_s: float,
        outcome: str,
        stdout: str,
        stderr: str,
        turn: int,
    ) -> None: ...

    def warning(self, message: str) -> None: ...


@dataclass(frozen=True)
class PreToolDecision:
    """What the pre_tool hooks decided about one call."""

    arguments: dict[str, Any]
    """The arguments to call with (rewritten, or as the model gave them)."""
    blocked: str | None = None
    """The reason the call is not made, or None."""
    rewritten_by: str | None = None
    """The command of the hook that rewrote the arguments, if one did."""


class HookRunner:
    """Runs the hooks of one session and records each run."""

    def __init__(
        self,
        hooks: Hooks,
        *,
        workdir: Path,
        env: Mapping[str, str],
        session_id: str,
        log: HookLog,
        warn: Callable[[str], None],
        turn: Callable[[], int],
        mask: Callable[[str], str] = str,
    ) -> None:
        self.hooks = hooks
        self._mask = mask
        """Masks secrets in what a hook prints before it goes back to the model."""
        self._workdir = workdir
        self._env = dict(env)
        self._session_id = session_id
        self._log = log
        self._warn = warn
        self._turn = turn

    def _said(self, output: str) -> str:
        """A hook's output as the model gets it: the end of it, secrets masked."""
        return self._mask(_text(output))

    def tool_hooks(self, event: Literal["pre_tool", "post_tool"], tool: str) -> list[ToolHook]:
        hooks: list[ToolHook] = getattr(self.hooks, event)
        return [h for h in hooks if any(fnmatch.fnmatchcase(tool, g) for g in h.match)]

    async def pre_tool(
        self, tool: str, arguments: dict[str, Any], valid: Callable[[dict[str, Any]], str | None]
    ) -> PreToolDecision:
        """Run the pre_tool hooks in order; `valid` says what is wrong with new arguments."""
        decision = PreToolDecision(arguments)
        for hook in self.tool_hooks("pre_tool", tool):
            payload = {"tool": tool, "arguments": decision.arguments}
            run, outcome = await self._run("pre_tool", hook, payload, tool, self._pre_outcome)
            if outcome == "blocked":
                reason = self._said(run.stderr) or f"exit code {BLOCK_EXIT_CODE}, no reason given"
                return PreToolDecision(decision.arguments, blocked=f"`{hook.run}`: {reason}")
            if outcome == "rewrote":
                new = json.loads(run.stdout)["arguments"]
                problem = valid(new)
                if problem is not None:
                    return PreToolDecision(
                        decision.arguments,
                        blocked=f"`{hook.run}` rewrote the arguments into ones that do not fit "
                        f"the tool's schema: {problem}",
                    )
                decision = PreToolDecision(new, rewritten_by=hook.run)
        return decision

    async def post_tool(
        self, tool: str, arguments: Mapping[str, Any], result: str, is_error: bool
    ) -> str:
        """Run the post_tool hooks; their stdout (exit 0), to append to the result."""
        added = []
        cut = result[:MAX_EVENT_BYTES]
        for hook in self.tool_hooks("post_tool", tool):
            payload = {"tool": tool, "arguments": arguments, "result": cut, "is_error": is_error}
            run, outcome = await self._run("post_tool", hook, payload, tool)
            if outcome == "ok" and run.stdout.strip():
                added.append(self._said(run.stdout))
        return "\n".join(added)

    async def stop(self, result: str) -> str | None:
        """Run the stop hooks; the first refusal's reason (exit 2), or None to accept."""
        for hook in self.hooks.stop:
            run, outcome = await self._run("stop", hook, {"result": result})
            if outcome == "blocked":
                reason = self._said(run.stderr) or self._said(run.stdout) or "no reason given"
                return f"`{hook.run}`: {reason}"
        return None

    async def session_start(self) -> str:
        """Run the session_start hooks; their stdout, to add to the first user message."""
        added = []
        for hook in self.hooks.session_start:
            run, outcome = await self._run("session_start", hook, {})
            if outcome == "ok" and run.stdout.strip():
                added.append(self._said(run.stdout))
        return "".join(f"\n\n[session_start hook output]\n{text}" for text in added)

    async def session_end(self, status: str, reason: str) -> None:
        """Run the session_end hooks; their exit status changes nothing."""
        for hook in self.hooks.session_end:
            await self._run("session_end", hook, {"status": status, "reason": reason}, end=True)

    async def _run(
        self,
        event: str,
        hook: Hook,
        payload: Mapping[str, Any],
        tool: str | None = None,
        classify: Callable[[ShellRun], Outcome] | None = None,
        *,
        end: bool = False,
    ) -> tuple[ShellRun, Outcome]:
        turn = self._turn()
        data = {
            "event": event,
            "tool": tool,
            **payload,
            "session_id": self._session_id,
            "turn": turn,
            "workdir": str(self._workdir),
        }
        env = {
            **self._env,
            "AGENT_RUNNER_EVENT": event,
            "AGENT_RUNNER_TOOL": tool or "",
            "AGENT_RUNNER_SESSION_ID": self._session_id,
        }
        try:
            run = await run_shell(
                hook.run,
                cwd=self._workdir,
                env=env,
                input_bytes=json.dumps(data, ensure_ascii=False, default=str).encode("utf-8"),
                timeout_s=hook.timeout,
                watcher=shared_reaper(),
            )
        except OSError as exc:  # no shell, no workdir: the hook could not start
            run = ShellRun(None, "", f"the hook could not start: {exc}", False, 0.0)
        outcome = (classify or _outcome)(run)
        if end and outcome != "ok":
            outcome = "warning" if run.timed_out or run.exit_code is None else "ok"
        self._log.hook(
            event=event,
            tool=tool,
            command=hook.run,
            exit_code=run.exit_code,
            timed_out=run.timed_out,
            duration_s=run.duration_s,
            outcome=outcome,
            stdout=run.stdout[-TAIL_CHARS:],
            stderr=run.stderr[-TAIL_CHARS:],
            turn=turn,
        )
        if outcome == "warning":
            self._warn(f"{event} hook `{hook.run}` {_failure(run)}; going on")
        return run, outcome

    @staticmethod
    def _pre_outcome(run: ShellRun) -> Outcome:
        outcome = _outcome(run)
        if outcome == "ok" and _rewrite(run.stdout):
            return "rewrote"
        return outcome


def _outcome(run: ShellRun) -> Outcome:
    if run.exit_code == 0:
        return "ok"
    if run.exit_code == BLOCK_EXIT_CODE:
        return "blocked"
    return "warning"


def _rewrite(stdout: str) -> bool:
    """Whether a pre_tool hook printed `{"arguments": {...}}`."""
    text = stdout.strip()
    if not text.startswith("{"):
        return False
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict) and isinstance(data.get("arguments"), dict)


def _failure(run: ShellRun) -> str:
    if run.timed_out:
        return f"timed out after {run.duration_s:g} s (its process group was killed)"
    if run.exit_code is None:
        return _text(run.stderr) or "could not start"
    if run.exit_code < 0:
        return f"was killed by signal {-run.exit_code}"
    tail = _text(run.stderr)[-300:]
    return f"exited with {run.exit_code}" + (f": {tail}" if tail else "")


def _text(output: str) -> str:
    text = output.strip()
    if len(text) > MAX_FEEDBACK_CHARS:
        cut = len(text) - MAX_FEEDBACK_CHARS
        text = f"[... {cut} characters cut ...]\n{text[-MAX_FEEDBACK_CHARS:]}"
    return text


def stop_feedback(refusal: str, attempts_left: int) -> str:
    """The user message that sends a stop hook's refusal back to the agent."""
    return (
        f"A stop hook refused your attempt_completion, so the task is not done yet: {refusal}\n\n"
        "Deal with it, then call attempt_completion again "
        f"({attempts_left} attempt(s) left)."
    )
