"""Load task files into resolved tasks.

Every problem is reported as `file:line:column: field: message (hint)`, all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from runner.errors import Problem, TaskFileError
from runner.llm import spec_problem
from runner.mcp import WORKSPACE, ExtensionConfig, overlay, workspace_extension
from runner.task.agents import config_agent_layer
from runner.task.interpolate import MissingVariable, fill_params, interpolate_env, placeholders
from runner.task.model import SuiteSpec, TaskSpec
from runner.task.problems import REFERENCE_HINT, explain_errors, without_bad_keys
from runner.task.sandbox import network_problems, writable_problems
from runner.task.secrets import declared_secrets, extension_secrets
from runner.task.toolcheck import static_unmatched
from runner.task.yamlsource import Located, Path_, YamlError, load_located

__all__ = ["Task", "load_tasks"]

_TEMPLATED_FIELDS = ("prompt", "description")


@dataclass(frozen=True)
class Task:
    """A task ready to run: params filled, paths absolute, extensions merged and interpolated."""

    name: str
    file: Path
    """The task file (absolute)."""
    line: int
    """Line of the task in its file (1 for a single-task file)."""
    spec: TaskSpec
    """The task as written, with params filled in."""
    workdir: Path
    """Absolute working directory of the tools."""
    prompt_dirs: tuple[Path, ...]
    """The task's own prompt section folders (absolute)."""
    extensions: dict[str, ExtensionConfig]
    """Every configured server by name, the built-in workspace included (maybe disabled)."""
    params: dict[str, str] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()
    """Secret values (runner/task/secrets.py): masked wherever anything is written."""
    named_secrets: Mapping[str, str] = field(default_factory=dict)
    """The same values by where each came from, for warnings that must not show the value."""
    isolated: Mapping[str, str] = field(default_factory=dict)
    """Set while the task runs in a git worktree (runner.run.session.isolation): the original
    `workdir`, `head`, `patch` (relative to --out) and `worktree`; empty otherwise."""
    where: Callable[[Path_], tuple[int, int]] | None = field(default=None, compare=False)
    """Line and column of a key path of the task (or of the suite default that set it)."""
    sample: int = 0
    """With `repeat: K` (DESIGN 22): which of the task's K samples this is, from 1; 0 otherwise."""
    of: int = 0
    """With `repeat: K`: K, the task's number of samples; 0 for a task that is not repeated."""

    @property
    def label(self) -> str:
        """The name as the console shows it: `name [i/K]` for a sample of a repeated task."""
        return f"{self.name} [{self.sample}/{self.of}]" if self.of else self.name

    @property
    def prompt(self) -> str:
        return self.spec.prompt

    def record(self) -> dict[str, Any]:
        """The resolved task as plain data, for the session log header (redact before writing)."""
        data = self.spec.model_dump(mode="json")
        data.update(
            name=self.name,
            file=str(self.file),
            workdir=str(self.workdir),
            params=self.params,
            extensions={k: v.model_dump(mode="json") for k, v in self.extensions.items()},
        )
        return data


def load_tasks(
    files: Iterable[Path],
    *,
    params: Mapping[str, str] | None = None,
    config_extensions: Mapping[str, Mapping[str, Any]] | None = None,
    env: Mapping[str, str] | None = None,
    config_agents: Mapping[str, Any] | None = None,
    problems: list[Problem] | None = None,
) -> list[Task]:
    """Load and resolve every task of `files`; raise TaskFileError listing every problem found,
    or with `problems` (`validate`), add them there and return even tasks with problems."""
    loader = _Loader(dict(params or {}), dict(config_extensions or {}), dict(env or {}))
    loader.config_agents = config_agent_layer(config_agents or {}, loader.problems)
    tasks: list[Task] = []
    for path in files:
        tasks.extend(loader.load_file(path))
    loader.check_unique_names(tasks)
    loader.check_params_declared()
    if problems is not None:
        problems.extend(loader.problems)
    elif loader.problems:
        raise TaskFileError(loader.problems)
    return tasks


class _Loader:
    def __init__(
        self,
        params: dict[str, str],
        config_extensions: dict[str, Mapping[str, Any]],
        env: dict[str, str],
    ) -> None:
        self.params = params
        self.config_extensions = config_extensions
        self.env = env
        self.problems: list[Problem] = []
        self.declared: set[str] = set()
        self.first_param_file: Path | None = None
        self.config_agents: dict[str, Any] = {}

    def problem(
        self, path: Path, located: Located | None, at: Path_, message: str, hint: str
    ) -> None:
        line, column = located.where(at) if located else (1, 1)
        self.problems.append(Problem(str(path), line, column, _dotted(at), message, hint))

    def load_file(self, path: Path) -> list[Task]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            self.problem(path, None, (), f"cannot read the file: {reason}", "check the path")
            return []
        try:
            located = load_located(text)
        except YamlError as exc:
            self.problems.append(
                Problem(str(path), exc.line, exc.column, "", exc.message, exc.hint)
            )
            return []
        self.first_param_file = self.first_param_file or path
        if located is None:
            self.problem(
                path, None, (), "the file is empty", "write a task with at least `prompt:`"
            )
            return []
        if not isinstance(located.data, dict):
            self.problem(path, located, (), "a task file must be a mapping of keys", REFERENCE_HINT)
            return []
        if "tasks" in located.data or "defaults" in located.data:
            return self._load_suite(path, located)
        return self._load_one(path, located, located.data, (), {}, path.stem)

    def _load_suite(self, path: Path, located: Located) -> list[Task]:
        try:
            suite = SuiteSpec.model_validate(located.data)
        except ValidationError as exc:
            self._report(path, located, exc, (), SuiteSpec)
            return []
        tasks = []
        for index, raw in enumerate(suite.tasks):
            if not isinstance(raw, dict):
                self.problem(path, located, ("tasks", index), "a task must be a mapping", "")
                continue
            tasks.extend(
                self._load_one(path, located, raw, ("tasks", index), suite.defaults, path.stem)
            )
        return tasks

    def _load_one(
        self,
        path: Path,
        located: Located,
        raw: dict[str, Any],
        at: Path_,
        defaults: dict[str, Any],
        default_name: str,
    ) -> list[Task]:
        merged = _deep_merge(defaults, raw)
        if self.config_agents:  # the config file's agents, under the task's own
            merged = _deep_merge({"agents": self.config_agents}, merged)
        merged.setdefault("name", default_name)
        try:
            spec = TaskSpec.model_validate(merged)
        except ValidationError as exc:
            self._report(path, located, exc, at, TaskSpec, raw)
            lenient = without_bad_keys(merged, exc, TaskSpec)
            if lenient is None:
                return []
            spec = lenient
        self.declared.update(spec.params)
        values = {k: str(v) for k, v in spec.params.items()}
        values.update({k: v for k, v in self.params.items() if k in spec.params})
        spec = self._fill_templates(path, located, at, spec, values)
        base = path.parent.resolve()
        workdir = (base / spec.workdir).resolve()
        repository = _repository_of(base)
        if workdir.is_file():
            self.problem(
                path,
                located,
                (*at, "workdir"),
                f"workdir {workdir} is a file, not a folder",
                "point `workdir:` at the folder the tools should work in",
            )
        elif not workdir.is_dir():
            self.problem(
                path,
                located,
                (*at, "workdir"),
                f"workdir {workdir} does not exist",
                "create it, or point `workdir:` at a folder relative to the task file",
            )
        elif repository is not None and not workdir.is_relative_to(repository):
            self.problem(
                path,
                located,
                (*at, "workdir"),
                f"workdir {workdir} is outside the repository {repository} that holds the "
                "task file (after resolving '..' and symlinks)",
                "point `workdir:` at a folder inside the repository, or keep the task file in "
                "the repository (or folder outside any repository) that holds the workdir",
            )
        if spec.success.require.changed_files and workdir.is_dir() and not _repository_of(workdir):
            self.problem(
                path,
                located,
                (*at, "success", "require", "changed_files"),
                f"changed_files needs git, but workdir {workdir} is not inside a git repository",
                "run the task in a git checkout (or `git init` the workdir), or drop the key",
            )
        if workdir.is_dir():
            found = writable_problems(spec.sandbox.writable, workdir, _repository_of(workdir))
            for index, message, hint in found:
                where = _own(at, raw, ("sandbox", "writable", index))
                self.problem(path, located, where, message, hint)
        for key, message, hint in network_problems(spec.sandbox.network):
            self.problem(path, located, _own(at, raw, ("sandbox", "network", *key)), message, hint)
        extensions, secrets = self._extensions(path, located, at, spec, workdir)
        if spec.model and (bad := spec_problem(spec.model)):
            self.problem(path, located, _own(at, raw, ("model",)), *bad)
        rubric = spec.success.rubric
        if rubric is not None and (bad := spec_problem(rubric.grader)):
            self.problem(path, located, _own(at, raw, ("success", "rubric", "grader")), *bad)
        for miss in static_unmatched(spec.tools, extensions):
            where = _own(at, raw, ("tools", miss.field, miss.index))
            self.problem(path, located, where, miss.message, miss.hint)
        line = located.where(at)[0] if at else 1
        return [
            Task(
                name=spec.name,
                file=path.resolve(),
                line=line,
                spec=spec,
                workdir=workdir,
                prompt_dirs=tuple((base / p).resolve() for p in spec.prompts),
                extensions=extensions,
                params=values,
                secrets=tuple(dict.fromkeys(secrets.values())),
                named_secrets=secrets,
                where=lambda key: located.where(_own(at, raw, key)),
            )
        ]

    def _fill_templates(
        self, path: Path, located: Located, at: Path_, spec: TaskSpec, values: dict[str, str]
    ) -> TaskSpec:
        texts: dict[Path_, str] = {(name,): getattr(spec, name) for name in _TEMPLATED_FIELDS}
        texts.update({("sections", title): text for title, text in spec.sections.items()})
        if spec.success.check:
            texts[("success", "check")] = spec.success.check
        ok = True
        for where, text in texts.items():
            for name in placeholders(text):
                if name not in values:
                    ok = False
                    declared = ", ".join(sorted(values)) or "none"
                    self.problem(
                        path,
                        located,
                        (*at, *where),
                        f"{{{{{name}}}}} is not a declared param",
                        f"declare it under `params:` (declared: {declared})",
                    )
        if not ok:
            return spec
        success = spec.success
        if success.check:
            success = success.model_copy(update={"check": fill_params(success.check, values)})
        return spec.model_copy(
            update={
                "prompt": fill_params(spec.prompt, values),
                "description": fill_params(spec.description, values),
                "sections": {t: fill_params(s, values) for t, s in spec.sections.items()},
                "success": success,
            }
        )

    def _extensions(
        self, path: Path, located: Located, at: Path_, spec: TaskSpec, workdir: Path
    ) -> tuple[dict[str, ExtensionConfig], dict[str, str]]:
        layers: list[Mapping[str, Mapping[str, Any]]] = [
            {WORKSPACE: workspace_extension(workdir).model_dump(exclude_defaults=True)},
            self.config_extensions,
            spec.extensions,
        ]
        merged: dict[str, dict[str, Any]] = {}
        for layer in layers:
            for name, fields in layer.items():
                merged[name] = overlay(merged.get(name, {}), fields)
        result: dict[str, ExtensionConfig] = {}
        secrets = declared_secrets(spec.secrets, self.env)
        for name, fields in merged.items():
            pulled: list[tuple[str, str]] = []
            where = (*at, "extensions", name)
            fields.setdefault("name", name)
            if fields.get("enabled", True) is not False:
                try:
                    fields = self._interpolate(fields, pulled)  # noqa: PLW2901
                except MissingVariable as missing:
                    self.problem(
                        path,
                        located,
                        where,
                        f"environment variable {missing.name} is not set",
                        f"set it, or write ${{{missing.name}:-default}}",
                    )
                    continue
            try:
                result[name] = ExtensionConfig.model_validate(fields)
            except ValidationError as exc:
                self._report(
                    path, located, exc, where, ExtensionConfig, spec.extensions.get(name, {})
                )
                continue
            secrets.update(extension_secrets(name, result[name], pulled, spec.secrets))
        return result, secrets

    def _interpolate(self, fields: dict[str, Any], pulled: list[tuple[str, str]]) -> dict[str, Any]:
        def expand(value: Any) -> Any:
            if isinstance(value, str):
                text, values = interpolate_env(value, self.env)
                pulled.extend(values)
                return text
            if isinstance(value, list):
                return [expand(v) for v in value]
            if isinstance(value, dict):
                return {k: expand(v) for k, v in value.items()}
            return value

        return {key: expand(value) for key, value in fields.items()}

    def _report(
        self,
        path: Path,
        located: Located,
        exc: ValidationError,
        at: Path_,
        model: type[BaseModel],
        own: Mapping[str, Any] | None = None,
    ) -> None:
        for loc, message, hint in explain_errors(exc, model):
            where = (*at, *loc)
            if own is not None and loc and loc[0] not in own and at[-2:-1] == ("extensions",):
                continue  # from the config file's entry: `check_config_extensions` blames it
            if at and own is not None and loc and loc[0] not in own and at[0] == "tasks":
                where = ("defaults", *loc)  # the bad value came from the suite's defaults
            self.problem(path, located, where, message, hint)

    def check_unique_names(self, tasks: list[Task]) -> None:
        seen: dict[str, Task] = {}
        for task in tasks:
            first = seen.setdefault(task.name, task)
            if first is not task:
                self.problems.append(
                    Problem(
                        str(task.file),
                        task.line,
                        1,
                        "name",
                        f"duplicate task name {task.name!r} (also at {first.file}:{first.line})",
                        "give every task a unique `name:`",
                    )
                )

    def check_params_declared(self) -> None:
        for name in sorted(set(self.params) - self.declared):
            declared = ", ".join(sorted(self.declared)) or "none"
            self.problems.append(
                Problem(
                    "--param",
                    0,
                    0,
                    name,
                    "no task declares this param",
                    f"declared params: {declared}",
                )
            )


def _repository_of(folder: Path) -> Path | None:
    """The git work tree holding `folder` (the nearest ancestor with a `.git`), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _own(at: Path_, raw: Mapping[str, Any], key: Path_) -> Path_:
    """Where `key` of a task is written: in the task, or in its suite's defaults."""
    return (*at, *key) if not at or key[0] in raw else ("defaults", *key)


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _dotted(path: Path_) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
