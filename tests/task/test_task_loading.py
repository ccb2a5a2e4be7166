"""Valid task files load into resolved tasks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.mcp.extension import WORKSPACE
from runner.task import discover_task_files, load_tasks, parse_duration


def write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_single_task_is_named_after_its_file(tmp_path):
    [task] = load_tasks([write(tmp_path, "prompt: hi\n", "add-health.yaml")])
    assert task.name == "add-health"
    assert task.workdir == tmp_path.resolve()
    assert task.spec.limits.max_turns == 50


def test_suite_defaults_merge_under_each_task(tmp_path):
    path = write(
        tmp_path,
        "defaults:\n  limits: {max_turns: 7, timeout: 20m}\n  sections: {STYLE: terse}\n"
        "tasks:\n  - name: a\n    prompt: x\n    limits: {max_turns: 3}\n"
        "  - name: b\n    prompt: y\n",
    )
    a, b = load_tasks([path])
    assert (a.spec.limits.max_turns, a.spec.limits.timeout) == (3, 1200.0)
    assert (b.spec.limits.max_turns, b.spec.limits.timeout) == (7, 1200.0)
    assert a.spec.sections == {"STYLE": "terse"}
    assert (a.line, b.line) == (5, 8)


def test_params_fill_the_prompt_check_and_sections(tmp_path):
    path = write(
        tmp_path,
        "prompt: Fix {{service}} for {{ who }}\nparams: {service: api, who: ops}\n"
        "sections:\n  NOTE: about {{service}}\nsuccess:\n  check: make test-{{service}}\n",
    )
    [task] = load_tasks([path], params={"service": "web"})
    assert task.prompt == "Fix web for ops"
    assert task.spec.sections == {"NOTE": "about web"}
    assert task.spec.success.check == "make test-web"
    assert task.params == {"service": "web", "who": "ops"}


def test_extensions_interpolate_environment_variables(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nextensions:\n  gl:\n    cmd: npx\n    args: ['${PKG:-server-gitlab}']\n"
        "    envs: {TOKEN: '${GITLAB_TOKEN}', COST: '$$5'}\n",
    )
    [task] = load_tasks([path], env={"GITLAB_TOKEN": "glpat-1234"})
    gitlab = task.extensions["gl"]
    assert gitlab.args == ["server-gitlab"]
    assert gitlab.envs == {"TOKEN": "glpat-1234", "COST": "$5"}
    assert "glpat-1234" in task.secrets


def test_only_secret_looking_or_listed_values_of_a_server_config_are_secrets(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nsecrets: [DEPLOY_PIN]\nextensions:\n  s:\n    cmd: npx\n"
        "    envs: {MODE: test, GH: '${GH_TOKEN}', API_KEY: literal-key-1, PIN: '${DEPLOY_PIN}',"
        " HOME_DIR: '${HOME_DIR}'}\n"
        "    headers: {Authorization: Bearer xyz-123, Accept: application/json}\n",
    )
    env = {"GH_TOKEN": "ghp-from-env", "DEPLOY_PIN": "4821", "HOME_DIR": "/home/me"}
    [task] = load_tasks([path], env=env)
    assert set(task.secrets) == {"ghp-from-env", "literal-key-1", "4821", "Bearer xyz-123"}
    assert task.named_secrets["extensions.s.headers.Authorization"] == "Bearer xyz-123"


def test_a_disabled_extension_needs_no_variables(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nextensions:\n  gl: {cmd: npx, enabled: false, envs: {T: '${UNSET_VAR}'}}\n",
    )
    [task] = load_tasks([path], env={})
    assert task.extensions["gl"].enabled is False


def test_the_workspace_server_is_on_by_default_and_rooted_at_the_workdir(tmp_path):
    (tmp_path / "proj").mkdir()
    [task] = load_tasks([write(tmp_path, "prompt: hi\nworkdir: proj\n")])
    workspace = task.extensions[WORKSPACE]
    assert workspace.enabled and workspace.cmd == sys.executable
    assert workspace.args[-2:] == ["--root", str((tmp_path / "proj").resolve())]


def test_the_workspace_server_can_be_turned_off(tmp_path):
    [task] = load_tasks(
        [write(tmp_path, "prompt: hi\nextensions: {workspace: {enabled: false}}\n")]
    )
    assert task.extensions[WORKSPACE].enabled is False


def test_config_extensions_merge_field_by_field_under_the_task(tmp_path):
    config = {"time": {"cmd": "uvx", "args": ["mcp-server-time"], "timeout": 30}}
    path = write(tmp_path, "prompt: hi\nextensions: {time: {timeout: 5}}\n")
    [task] = load_tasks([path], config_extensions=config)
    assert task.extensions["time"].cmd == "uvx"
    assert task.extensions["time"].timeout == 5


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("20m", 1200), ("1h", 3600), ("1h30m", 5400), ("500ms", 0.5), (45, 45)],
)
def test_durations_accept_the_usual_forms(text, seconds):
    assert parse_duration(text) == seconds


def test_discovery_takes_files_directories_and_globs(tmp_path):
    (tmp_path / "sub").mkdir()
    a = write(tmp_path, "prompt: a\n", "a.yaml")
    b = write(tmp_path / "sub", "prompt: b\n", "b.yml")
    write(tmp_path, "not a task", "notes.txt")
    assert discover_task_files([str(tmp_path)]) == [a.resolve(), b.resolve()]
    assert discover_task_files([str(tmp_path / "*.yaml"), str(a)]) == [a.resolve()]
    with pytest.raises(ConfigError, match="no such task file"):
        discover_task_files([str(tmp_path / "missing.yaml")])


def test_task_names_must_be_unique_across_files(tmp_path):
    (tmp_path / "x").mkdir()
    first = write(tmp_path, "name: same\nprompt: a\n", "a.yaml")
    second = write(tmp_path / "x", "name: same\nprompt: b\n", "b.yaml")
    from runner.errors import TaskFileError

    with pytest.raises(TaskFileError, match="duplicate task name 'same'"):
        load_tasks([first, second])


def test_extension_envs_and_headers_merge_variable_by_variable(tmp_path):
    config = {
        "gl": {"cmd": "npx", "envs": {"A": "1", "B": "2"}},
        "h": {"type": "sse", "uri": "http://127.0.0.1:9", "headers": {"X": "1", "Y": "2"}},
    }
    path = write(
        tmp_path,
        "prompt: hi\nextensions:\n  gl: {envs: {B: '3'}}\n  h: {headers: {Y: '4'}}\n",
    )
    [task] = load_tasks([path], config_extensions=config)
    assert task.extensions["gl"].envs == {"A": "1", "B": "3"}
    assert task.extensions["h"].headers == {"X": "1", "Y": "4"}


def test_extensions_keep_their_order_workspace_then_config_then_task(tmp_path):
    config = {"time": {"cmd": "uvx", "args": ["mcp-server-time"]}}
    path = write(tmp_path, "prompt: hi\nextensions: {git: {cmd: git-mcp}}\n")
    [task] = load_tasks([path], config_extensions=config)
    assert list(task.extensions) == [WORKSPACE, "time", "git"]
    assert task.extensions["time"].name == "time"
