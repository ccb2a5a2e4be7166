"""Malformed task files: each gets its own message with file:line:column and a hint, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import TaskFileError
from runner.task.loader import load_tasks


def write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path, **kwargs) -> list[str]:
    with pytest.raises(TaskFileError) as caught:
        load_tasks([path], **kwargs)
    return [str(p) for p in caught.value.problems]


def test_malformed_yaml_points_at_where_the_unclosed_bracket_opens(tmp_path):
    path = write(tmp_path, "prompt: hi\nlimits: {max_turns: 3\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:2:9:")
    assert "while parsing a flow mapping" in message and "(at line 3, column 1)" in message
    assert "not valid YAML" in message and "(fix the syntax here)" in message


def test_wrong_type_names_the_field_and_line(tmp_path):
    path = write(tmp_path, "prompt: hi\nlimits:\n  max_turns: many\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:3:3: limits.max_turns:")
    assert "integer" in message


def test_missing_prompt_says_how_to_fix(tmp_path):
    path = write(tmp_path, "name: x\ndescription: no prompt here\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:1:1: prompt: required field is missing")
    assert "add `prompt:`" in message


def test_empty_file_has_its_own_message(tmp_path):
    path = write(tmp_path, "# only a comment\n")
    [message] = problems(path)
    assert message == f"{path}:1:1: the file is empty (write a task with at least `prompt:`)"


def test_unknown_key_suggests_the_closest_field(tmp_path):
    path = write(tmp_path, "prompt: hi\nlimits:\n  max_turn: 3\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:3:3: limits.max_turn: unknown key")
    assert "did you mean 'max_turns'?" in message


def test_unknown_top_level_key_suggests_the_closest_field(tmp_path):
    path = write(tmp_path, "promt: hi\nprompt: x\n")
    [message] = problems(path)
    assert "promt: unknown key (did you mean 'prompt'?)" in message


def test_duplicate_task_names_in_a_suite_name_both_places(tmp_path):
    path = write(tmp_path, "tasks:\n  - name: a\n    prompt: x\n  - name: a\n    prompt: y\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:4:1: name: duplicate task name 'a'")
    assert f"also at {path}:2" in message


def test_duplicate_yaml_keys_are_refused(tmp_path):
    path = write(tmp_path, "prompt: a\nprompt: b\n")
    [message] = problems(path)
    assert "duplicate key 'prompt' (first on line 1)" in message


def test_a_list_instead_of_a_mapping_is_refused(tmp_path):
    path = write(tmp_path, "- prompt: a\n")
    [message] = problems(path)
    assert "must be a mapping" in message


def test_a_suite_with_no_tasks_is_refused(tmp_path):
    path = write(tmp_path, "defaults: {model: openai:gpt-4.1}\ntasks: []\n")
    [message] = problems(path)
    assert "tasks" in message


def test_a_bad_value_from_suite_defaults_points_at_the_defaults(tmp_path):
    path = write(tmp_path, "defaults:\n  limits: {max_turns: -1}\ntasks:\n  - prompt: a\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:2:")
    assert "defaults.limits.max_turns" in message


def test_every_problem_of_every_file_is_reported_at_once(tmp_path):
    first = write(tmp_path, "prompt: hi\nbogus: 1\n", "a.yaml")
    second = write(tmp_path, "", "b.yaml")
    with pytest.raises(TaskFileError) as caught:
        load_tasks([first, second])
    assert [p.path for p in caught.value.problems] == [str(first), str(second)]


def test_undeclared_placeholder_is_an_error(tmp_path):
    path = write(tmp_path, "prompt: Fix {{service}}\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:1:1: prompt: {{{{service}}}} is not a declared param")
    assert "declare it under `params:`" in message


def test_unknown_param_flag_is_an_error(tmp_path):
    path = write(tmp_path, "prompt: Fix {{service}}\nparams: {service: api}\n")
    [message] = problems(path, params={"servce": "web"})
    assert message == "--param: servce: no task declares this param (declared params: service)"


def test_bad_duration_is_explained(tmp_path):
    path = write(tmp_path, "prompt: hi\nlimits: {timeout: 20 minutes}\n")
    [message] = problems(path)
    assert "write it like 90s, 20m, 1h" in message


def test_missing_workdir_is_an_error(tmp_path):
    path = write(tmp_path, "prompt: hi\nworkdir: nowhere\n")
    [message] = problems(path)
    assert "workdir" in message and "does not exist" in message


def test_unset_environment_variable_in_an_extension_is_named(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nextensions:\n  gl:\n    cmd: npx\n    envs: {TOKEN: '${GITLAB_TOKEN}'}\n",
    )
    [message] = problems(path, env={})
    assert message.startswith(f"{path}:3:3: extensions.gl: environment variable GITLAB_TOKEN")
    assert "${GITLAB_TOKEN:-default}" in message


def test_errors_never_echo_an_interpolated_secret(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nextensions:\n  gl:\n    cmd: npx\n    envs: {TOKEN: '${GITLAB_TOKEN}'}\n"
        "    timeout: '${GITLAB_TOKEN}'\n",
    )
    found = problems(path, env={"GITLAB_TOKEN": "glpat-very-secret"})
    assert found
    assert not any("glpat-very-secret" in message for message in found)


def test_a_stdio_extension_needs_a_command(tmp_path):
    path = write(tmp_path, "prompt: hi\nextensions:\n  time: {args: [x]}\n")
    [message] = problems(path)
    assert "extensions.time" in message and "needs `cmd`" in message


def test_a_yaml_alias_bomb_is_refused(tmp_path):
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    path = write(tmp_path, "\n".join(lines) + "\nprompt: hi\n")
    [message] = problems(path)
    assert "alias bomb" in message


def test_deep_nesting_is_refused(tmp_path):
    path = write(tmp_path, "prompt: hi\nsections: " + "[" * 5000 + "]" * 5000 + "\n")
    [message] = problems(path)
    assert "nesting" in message


def test_python_tags_are_not_constructed(tmp_path):
    path = write(tmp_path, "prompt: !!python/object/apply:os.system [echo pwned]\n")
    [message] = problems(path)
    assert "unsupported YAML tag" in message


def test_a_writable_folder_that_is_missing_or_outside_the_repository_is_a_file_line_error(
    tmp_path,
):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "build").mkdir()
    (tmp_path / "elsewhere").mkdir()
    path = write(
        repo,
        "prompt: hi\nsandbox:\n  writable:\n    - build\n    - missing\n    - ../elsewhere\n",
    )
    missing, outside = problems(path)
    assert missing.startswith(f"{path}:5:") and "does not exist" in missing
    assert outside.startswith(f"{path}:6:") and "outside the repository" in outside
    assert "sandbox.writable[2]" in outside


def test_a_bad_sandbox_mode_is_a_file_line_error(tmp_path):
    path = write(tmp_path, "prompt: hi\nsandbox: {mode: sometimes}\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:2:") and "sandbox.mode" in message


def test_bad_network_hosts_are_file_line_errors_that_say_how_to_write_them(tmp_path):
    path = write(
        tmp_path,
        "prompt: hi\nsandbox:\n  network:\n    - pypi.org\n    - https://pypi.org/simple\n"
        "    - py*.org\n    - 'github.com:70000'\n    - '*.npmjs.org'\n    - '[::1]:80'\n",
    )
    url, middle, port = problems(path)
    assert url.startswith(f"{path}:5:") and "sandbox.network[1]" in url
    assert "is a URL, not a host" in url and "'pypi.org'" in url
    assert middle.startswith(f"{path}:6:") and "a wildcard may only start the host" in middle
    assert port.startswith(f"{path}:7:") and "from 1 to 65535" in port


def test_an_empty_network_list_is_a_file_line_error(tmp_path):
    path = write(tmp_path, "prompt: hi\nsandbox:\n  network: []\n")
    [message] = problems(path)
    assert message.startswith(f"{path}:3:") and "network: false" in message
