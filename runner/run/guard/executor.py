"""The loop's tool executor for a task with permissions, hooks or skills (DESIGN section 14).

Around the hub, in this order: the permission rules (a denied call gets an error result naming
the rule), the pre_tool hooks (which may block the call or rewrite its arguments; rewritten
arguments are checked against the tool's schema and the rules again), the call itself (the
runner's own `load_skill`, or the hub), then the post_tool hooks, whose output is appended to the
result the model sees. A call of a tool the task's policy does not offer goes straight to the
hub, which refuses it: no hook runs for a call that cannot be made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from runner.prompt import LOAD_SKILL, Skill
from runner.run.guard.hooks import HookRunner
from runner.run.guard.permissions import PermissionGate
from runner.run.turn import ToolExecutor
from runner.toolcall import ToolResult, ToolSpec
from runner.workspace import WorkspaceError

__all__ = ["GuardedExecutor", "Hub"]


class Hub(ToolExecutor, Protocol):
    """What the guard wraps (`runner.mcp.McpHub` fits)."""

    @property
    def tools(self) -> list[ToolSpec]: ...
    @property
    def allowed_tools(self) -> list[ToolSpec]: ...


class GuardedExecutor:
    """A `ToolExecutor` that applies the task's rules and hooks, and serves `load_skill`.

    It lists tools as the hub does (`tools`, `allowed_tools`, with `load_skill` added), so the
    sub-agents' executor can wrap it: a child's calls go through the same rules and hooks.
    """

    def __init__(
        self,
        inner: Hub,
        *,
        offered: Sequence[ToolSpec],
        gate: PermissionGate | None = None,
        hooks: HookRunner | None = None,
        skills: Sequence[Skill] = (),
    ) -> None:
        self._inner = inner
        self._offered = {spec.name: spec for spec in offered}
        self._gate = gate
        self._hooks = hooks
        self._skills = {skill.name: skill for skill in skills}

    @property
    def tools(self) -> list[ToolSpec]:
        """Every tool, the runner's own included."""
        own = [spec for spec in self._offered.values() if not spec.server]
        return [*self._inner.tools, *own]

    @property
    def allowed_tools(self) -> list[ToolSpec]:
        """The tools offered to the model."""
        return list(self._offered.values())

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call; every refusal or failure is an error result."""
        spec = self._offered.get(name)
        if spec is None:
            return await self._inner.call(name, arguments)
        refusal = self._refusal(spec, arguments)
        if refusal is not None:  # a permission rule: `success.require.no_denied_calls` counts it
            return ToolResult(refusal, is_error=True, denied=True)
        rewritten_by = None
        if self._hooks is not None:
            decision = await self._hooks.pre_tool(name, arguments, lambda new: _invalid(spec, new))
            if decision.blocked is not None:
                return ToolResult(
                    f"Error: a pre_tool hook blocked this call; it was not run. {decision.blocked}",
                    True,
                )
            if decision.rewritten_by is not None:
                arguments, rewritten_by = decision.arguments, decision.rewritten_by
                refusal = self._refusal(spec, arguments)
                if refusal is not None:
                    return ToolResult(refusal, is_error=True, denied=True, arguments=arguments)
        result = await self._run(name, arguments)
        text = result.text
        if rewritten_by is not None:
            text = f"[the pre_tool hook `{rewritten_by}` changed this call's arguments]\n{text}"
        if self._hooks is not None:
            added = await self._hooks.post_tool(name, arguments, result.text, result.is_error)
            if added:
                text = f"{text}\n\n[post_tool hook output]\n{added}"
        return ToolResult(
            text,
            is_error=result.is_error,
            denied=result.denied,
            arguments=arguments if rewritten_by else None,
            log_fields=result.log_fields,
        )

    def _refusal(self, spec: ToolSpec, arguments: Mapping[str, Any]) -> str | None:
        return self._gate.refusal(spec, arguments) if self._gate is not None else None

    async def _run(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name != LOAD_SKILL or not self._skills:
            return await self._inner.call(name, arguments)
        skill = self._skills.get(str(arguments.get("name", "")))
        if skill is None:
            known = ", ".join(sorted(self._skills))
            return ToolResult(
                f"Error: no skill named {arguments.get('name')!r}. Skills: {known}.", True
            )
        file = arguments.get("file")
        if not file:
            files = skill.files()
            listing = (
                f"\n\nFiles of this skill (load one with `file`): {', '.join(files)}"
                if files
                else ""
            )
            return ToolResult(f"{skill.body}{listing}")
        try:
            return ToolResult(skill.read(str(file)))
        except WorkspaceError as exc:
            return ToolResult(f"Error: {exc}", True)


def _invalid(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """What is wrong with `arguments` under the tool's schema, or None."""
    import jsonschema

    schema = spec.input_schema or {"type": "object"}
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(arguments),
        key=lambda e: list(e.absolute_path),
    )
    if not errors:
        return None
    where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
    return f"at {where}: {errors[0].message}"
