"""The task file schema (DESIGN section 3) as pydantic models: one docstring per field."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from runner.mcp import ToolPolicy
from runner.settings import SandboxSettings
from runner.task.agents import AgentSpec, check_agent_names
from runner.task.duration import Duration
from runner.task.hooks import Hooks
from runner.task.permissions import Permissions

__all__ = [
    "Expect",
    "FindingsSpec",
    "Limits",
    "Require",
    "Rubric",
    "Success",
    "SuiteSpec",
    "TaskSpec",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Limits(_Strict):
    """Budgets; reaching one ends the task as `budget_exceeded`."""

    max_turns: int | None = Field(50, gt=0)
    """Model calls per task."""
    max_tokens: int | None = Field(None, gt=0)
    """Input plus output tokens per task."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Cost per task in US dollars."""
    timeout: Duration | None = None
    """Wall time per task."""
    tool_timeout: Duration | None = None
    """Time per tool call; overrides an extension's own `timeout`."""
    max_depth: int = Field(1, ge=1, le=5)
    """Levels of sub-agents: 1 lets the task start sub-agents but not theirs (DESIGN 13)."""
    max_parallel_agents: int = Field(4, ge=1, le=32)
    """Sub-agents of one reply that run at the same time."""


class Expect(_Strict):
    """Checks on the `attempt_completion` result."""

    regex: str | None = None
    """A regular expression the result must contain a match of."""
    json_schema: dict[str, Any] | None = None
    """A JSON Schema the result, parsed as JSON, must satisfy."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            import jsonschema

            try:
                jsonschema.validators.validator_for(value).check_schema(value)
            except jsonschema.SchemaError as exc:
                raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        return value


class Require(_Strict):
    """What must have happened during the task for a reported success to count (DESIGN 12)."""

    min_tool_calls: int | None = Field(None, ge=1)
    """At least this many tool calls that the policy let through (attempt_completion aside)."""
    changed_files: bool = False
    """The workdir's git status (or HEAD) must differ at completion from the task's start."""
    no_denied_calls: bool = False
    """Not one tool call may have been refused by the tool policy."""


class Rubric(_Strict):
    """`success.rubric` (DESIGN 27): criteria a grader model judges the completed work by."""

    model_config = ConfigDict(extra="forbid", frozen=True, serialize_by_alias=True)

    criteria: list[str] = Field(min_length=1, max_length=50)
    """What the work must satisfy, one statement each; each is judged pass or fail."""
    grader: str = Field(min_length=1)
    """`PROVIDER:MODEL` of the grader; another model than the task's own."""
    votes: int = Field(1, ge=1, le=9)
    """Grades per criterion (odd); the majority counts."""
    pass_: Literal["all"] | float = Field("all", alias="pass")
    """`all`: every criterion must pass; a fraction (0 < f <= 1): that share of them."""
    max_cost_usd: float | None = Field(None, gt=0)
    """The most the grader may cost over the task (all its gradings); reaching it ends the task
    as budget_exceeded."""
    allow_self_grading: bool = False
    """Let `grader` be the task's own model (refused by default: a model grading itself)."""

    @field_validator("criteria")
    @classmethod
    def _criteria_text(cls, value: list[str]) -> list[str]:
        stripped = [text.strip() for text in value]
        for index, text in enumerate(stripped):
            if not text:
                raise ValueError(f"criterion {index + 1} is empty: write what the work must do")
        return stripped

    @field_validator("votes")
    @classmethod
    def _odd(cls, value: int) -> int:
        if value % 2 == 0:
            raise ValueError(
                f"votes must be odd so that a majority decides: {value - 1} or {value + 1}"
            )
        return value

    @field_validator("pass_")
    @classmethod
    def _fraction(cls, value: str | float) -> str | float:
        if isinstance(value, float) and not 0 < value <= 1:
            raise ValueError("a fraction of the criteria from 0 (excluded) to 1, or `all`")
        return value


class Success(_Strict):
    """How a completed task is judged."""

    check: str | None = None
    """Shell command run in the workdir after completion; exit 0 = pass."""
    retries: int = Field(0, ge=0, le=20)
    """Times a failed check's output (or a failed rubric's reasons) is sent back to the agent
    to repair."""
    check_timeout: Duration = 600.0
    """Time limit of the check command."""
    expect: Expect | None = None
    """Checks on the completion result."""
    require: Require = Require()
    """What the agent must have done; a miss fails the task as `requirement`, with no retry."""
    rubric: Rubric | None = None
    """Criteria a grader model judges the work by, after `require`, `expect` and `check` pass;
    a failed rubric goes back to the agent with the grader's reasons, within `retries`."""

    @model_serializer(mode="wrap")
    def _without_absent_rubric(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A task without a rubric is recorded as before rubrics existed: a resume compares the
        # recorded task with the file's, and an older log must not read as drifted.
        data: dict[str, Any] = handler(self)
        if data.get("rubric", ...) is None:
            del data["rubric"]
        return data


class FindingsSpec(_Strict):
    """`findings:` (DESIGN 21): the agent reports review findings with `report_finding`."""

    fail_on: Literal["error", "warning", "note", "never"] | None = None
    """A finding at or above this severity fails the task; `--fail-on` overrides it."""


class TaskSpec(_Strict):
    """One task as written in a file (after suite defaults are merged in)."""

    name: str = Field("", max_length=200)
    """Unique name; default: the file's stem."""
    description: str = ""
    """One line on what the task is for."""
    prompt: str = Field(min_length=1)
    """The first user message; `{{param}}` takes a declared param."""
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    """Declared params with their defaults; `--param KEY=VALUE` overrides."""
    model: str | None = None
    """`PROVIDER:MODEL`; default: the settings' model."""
    workdir: str = "."
    """Where tools run, relative to the task file."""
    prompts: list[str] = Field(default_factory=list)
    """Extra prompt section folders, relative to the task file."""
    sections: dict[str, str] = Field(default_factory=dict)
    """Inline prompt sections by title."""
    extensions: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """MCP servers, merged over the config file's (validated after the merge)."""
    tools: ToolPolicy = ToolPolicy()
    """Which tools the agent may call."""
    limits: Limits = Limits()
    """Budgets."""
    success: Success = Success()
    """How the result is judged."""
    secrets: list[str] = Field(default_factory=list)
    """Names of environment variables whose values are masked like the secret-named ones."""
    hooks: Hooks = Hooks()
    """Shell commands run at tool calls and session events (after the config file's)."""
    skills: list[str] = Field(default_factory=list)
    """Folders of `<name>/SKILL.md` skills, relative to the task file."""
    permissions: Permissions = Permissions()
    """`TOOL(GLOB)` rules over the calls' main arguments; deny wins."""
    isolation: Literal["none", "worktree"] = "none"
    """`worktree`: run in a fresh git worktree of the workdir; the change becomes a patch."""
    tool_mode: Literal["xml", "native", "auto"] = "xml"
    """How tool calls are made: XML in text (default), the provider's native tool API, or
    `auto` (native where the provider and model support it, see runner.run.turn.native)."""
    tool_search: Literal["auto", "always", "never"] | None = None
    """Defer MCP tools behind `find_tools` (DESIGN 28): `auto` past the config's thresholds,
    `always`, or `never`; None: the config's `tool_search.mode` (default `auto`)."""
    agents: dict[str, AgentSpec] = Field(default_factory=dict)
    """Sub-agents the task may start with the `sub_agent` tool (runner.task.agents)."""
    sandbox: SandboxSettings = SandboxSettings()
    """How commands, hooks and the check are confined; keys set here override the config's."""
    repeat: int = Field(1, ge=1, le=1000)  # runner.report.repeats.MAX_REPEAT
    """Run the task this many times, as samples with a pass rate (DESIGN 22); `--repeat` wins."""
    check_env: list[str] = Field(default_factory=list)
    """Names of the runner's environment variables the success check and the hooks get, beyond
    the minimal environment that commands get."""
    findings: FindingsSpec | None = None
    """`true` (or a mapping): offer `report_finding`; the findings go to SARIF and the reports."""

    @field_validator("findings", mode="before")
    @classmethod
    def _findings_switch(cls, value: Any) -> Any:
        if isinstance(value, bool):  # `findings: true` is `findings: {}`, `false` is none
            return {} if value else None
        return value

    @field_validator("agents")
    @classmethod
    def _agent_names(cls, value: dict[str, AgentSpec]) -> dict[str, AgentSpec]:
        bad = check_agent_names(value)
        if bad:
            raise ValueError(
                f"agent name {bad[0]!r} is not a name: use letters, digits, '-' and '_', "
                "starting with a letter"
            )
        return value

    @field_validator("name")
    @classmethod
    def _printable_name(cls, value: str) -> str:
        if value and not value.isprintable():
            raise ValueError("a task name must be printable text on one line")
        return value.strip()


class SuiteSpec(_Strict):
    """A file with several tasks sharing defaults."""

    defaults: dict[str, Any] = Field(default_factory=dict)
    """Task fields every task of the file starts from."""
    tasks: list[dict[str, Any]] = Field(min_length=1)
    """The tasks; each is a task as in a single-task file."""
