"""`run -p PROMPT`: one task without a task file (DESIGN 20).

The prompt becomes a task file of its own, `<out>/tasks/<name>.yaml` (the prompt masked like
every artifact, though the model gets it as written; `workdir:` pointing at `--workdir`), loaded
like any other: the same defaults
(the config's model, extensions and hooks; the built-in workspace tools), logs, reports and exit
codes. Being a file, it is what the reports point at, what `run` can take again, and what
`resume` finds in the checkout to continue the session.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from runner.atomic import write_text_atomic
from runner.errors import ConfigError
from runner.redact import Redactor
from runner.run.plan.loading import load_selected_tasks
from runner.settings import Settings
from runner.task import Task

__all__ = [
    "PROMPT_TASK_DESCRIPTION",
    "PromptTask",
    "load_prompt_task",
    "prompt_task_path",
    "said_with_flags",
]

PROMPT_TASK_DESCRIPTION = "a prompt given on the command line (run -p)"
"""The `description:` of a task file `run -p` wrote (resume finds such a file beside its log)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}")


@dataclass(frozen=True)
class PromptTask:
    """The task `-p`/`--prompt-file` describe."""

    prompt: str
    """The first user message, sent as written."""
    name: str = "prompt"
    """`--name`: the task's name, and its file's under `<out>/tasks/`."""
    workdir: Path = Path()
    """`--workdir`: where the tools work."""


def load_prompt_task(
    source: PromptTask, params: Mapping[str, str], settings: Settings, out: Path
) -> list[Task]:
    """Write the task file of `source` under `out` and load it; ConfigError when it cannot be."""
    if not _NAME.fullmatch(source.name):
        raise ConfigError(
            f"--name {source.name!r}: use up to 100 letters, digits, '.', '_' and '-', starting "
            "with a letter or digit (it names the task's file)"
        )
    workdir = source.workdir.resolve()
    if not workdir.is_dir():
        raise ConfigError(f"--workdir {source.workdir}: no such folder")
    path = prompt_task_path(source, out)
    _check_same_repository(path, workdir, out)
    redactor = Redactor(settings.secret_values())
    prompt = redactor.text(source.prompt)
    data = {
        "name": source.name,
        "description": PROMPT_TASK_DESCRIPTION,
        "prompt": prompt,
        "workdir": os.path.relpath(workdir, path.parent),
        # `{{...}}` in a prompt is text, not a param: each is declared with itself as its value.
        "params": {m.group(1): m.group(0) for m in _PLACEHOLDER.finditer(prompt)},
    }
    if not data["params"]:
        del data["params"]
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    try:
        write_text_atomic(path, text)
    except OSError as error:
        raise ConfigError(
            f"--out {out}: cannot write the prompt's task file {path}: {error.strerror or error}"
        ) from None
    tasks = load_selected_tasks([str(path)], params, settings)
    if prompt != source.prompt:
        # A secret was masked in the file (an artifact), not in what the model is sent.
        spec = {"prompt": source.prompt}
        tasks = [replace(task, spec=task.spec.model_copy(update=spec)) for task in tasks]
    return tasks


def prompt_task_path(source: PromptTask, out: Path) -> Path:
    """Where `run -p` writes the task file of `source`."""
    return (out / "tasks" / f"{source.name}.yaml").resolve()


_RULE_FIELD = re.compile(r"\bpermissions\.(allow|deny)\[(\d+)\]")


def said_with_flags(
    error: ConfigError, path: Path, allow: Sequence[str], deny: Sequence[str]
) -> ConfigError:
    """`error` about the task file `run -p` wrote, said in the words the user typed: the
    generated file's `path:line:` becomes `run -p:`, and a permission rule is named by its
    `--allow-tool`/`--deny-tool` flag (the file's rules are the flags', in order)."""
    text = str(error)
    where = re.compile("^" + re.escape(str(path)) + r"(?::\d+)*: ?", re.MULTILINE)
    text = where.sub("run -p: ", text)

    def flag(match: re.Match[str]) -> str:
        kind, index = match.group(1), int(match.group(2))
        rules = allow if kind == "allow" else deny
        rule = rules[index] if index < len(rules) else "?"
        return f"--{kind}-tool {rule!r}"

    text = _RULE_FIELD.sub(flag, text)
    text = text.replace("set `model:` in the task,", "set `model:` in the config file,")
    text = text.replace("(see docs/task-files.md)", "").rstrip()
    if text == str(error):
        return error
    said = ConfigError(text)
    said.__cause__ = error.__cause__
    return said


def _check_same_repository(path: Path, workdir: Path, out: Path) -> None:
    """A task file's workdir must be in the repository that holds the file (the loader's rule)."""
    holder = _repository_of(path.parent)
    if holder is not None and not workdir.is_relative_to(holder):
        raise ConfigError(
            f"--workdir {workdir} is outside the git repository {holder} that holds --out {out}; "
            "pass an --out inside the workdir's repository (or outside any repository)"
        )


def _repository_of(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
