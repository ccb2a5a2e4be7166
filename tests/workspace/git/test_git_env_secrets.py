"""The runner's own git (DESIGN 18) gets no secret: every secret the runner knows (the provider
keys, GITHUB_TOKEN, every variable whose name says it is a secret, every name a task declares
under `secrets:`) and every variable that steers git elsewhere is absent from what git and the
programs it starts see; only PATH, LANG and TZ of the runner's are kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner.settings import load_settings
from runner.workspace.git.gitsafe import Shadow, git_env, record_folder, run_git
from tests.conftest import git

pytestmark = pytest.mark.anyio

SECRETS = {
    "GITHUB_TOKEN": "ghs_github-token-0123456789",
    "GH_TOKEN": "gho_gh-cli-token-0123456789",
    "OPENAI_API_KEY": "sk-openai-key-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-key-0123456789",
    "AGENT_RUNNER_OPENAI_API_KEY": "sk-runner-openai-0123456789",
    "AGENT_RUNNER_ANTHROPIC_API_KEY": "sk-runner-anthropic-0123456789",
    "ACTIONS_RUNTIME_TOKEN": "actions-runtime-0123456789",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "oidc-request-0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-0123456789",
    "NPM_AUTH": "npm-auth-0123456789",
    "DB_PASSWORD": "db-password-0123456789",
    "SESSION_COOKIE": "cookie-0123456789",
    "GCP_CREDENTIALS": "gcp-credential-0123456789",
    "DEPLOY_HOOK_URL": "https://hooks.example/declared-0123456789",
}
"""Every kind of secret: the provider keys in both spellings, the CI's tokens, a name for each
word `looks_secret` reads, and one only `secrets:` declares (DEPLOY_HOOK_URL)."""
STEERING = {
    "GIT_DIR": "/elsewhere/.git",
    "GIT_WORK_TREE": "/elsewhere",
    "GIT_INDEX_FILE": "/elsewhere/index",
    "GIT_OBJECT_DIRECTORY": "/elsewhere/objects",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/elsewhere/objects",
    "GIT_CONFIG": "/elsewhere/config",
    "GIT_CONFIG_SYSTEM": "/elsewhere/config",
    "GIT_EXTERNAL_DIFF": "/elsewhere/diff",
    "GIT_SSH_COMMAND": "/elsewhere/ssh",
    "GIT_ASKPASS": "/elsewhere/askpass",
    "SSH_ASKPASS": "/elsewhere/askpass",
    "SSH_AUTH_SOCK": "/elsewhere/agent.sock",
    "GIT_EXEC_PATH": "/elsewhere/libexec",
    "GIT_TRACE": "/elsewhere/trace",
    "LD_PRELOAD": "/elsewhere/lib.so",
    "PYTHONPATH": "/elsewhere",
    "XDG_CONFIG_HOME": "/elsewhere/.config",
    "HOME": "/root-of-the-runner",
}
"""Variables that would point git (or what it starts) at files the runner did not choose."""
KEPT = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "TZ": "Europe/Paris"}
OWN = {
    "LC_ALL",
    "HOME",
    "XDG_CONFIG_HOME",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_ATTR_NOSYSTEM",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_TERMINAL_PROMPT",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
}
"""What git_env sets of its own."""
RUNNER_ENV = {**SECRETS, **STEERING, **KEPT}


def test_every_secret_the_settings_know_is_a_secret_of_this_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The list above is the registry's: each value is one the runner masks."""
    for name, value in RUNNER_ENV.items():
        monkeypatch.setenv(name, value)
    settings = load_settings({"secrets": ["DEPLOY_HOOK_URL"]})
    assert set(SECRETS.values()) <= set(settings.secret_values())


def test_the_environment_has_no_secret_and_nothing_that_steers_git() -> None:
    env = git_env(RUNNER_ENV)
    assert set(env) == set(KEPT) | OWN
    assert {name: env[name] for name in KEPT} == KEPT
    text = repr(env)
    for value in [*SECRETS.values(), *STEERING.values()]:
        assert value not in text


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_alone_is_left_out(name: str) -> None:
    """One at a time, so a rule that keeps one kind (a name not said secret) cannot hide."""
    assert git_env({**KEPT, name: SECRETS[name]}) == git_env(KEPT)


async def test_a_program_git_starts_sees_no_secret(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    alias = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "alias.e", "GIT_CONFIG_VALUE_0": "!env"}
    code, out, err = await run_git(tmp_path, git_env(RUNNER_ENV, **alias), "e")
    assert code == 0, err
    seen = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
    for value in [*SECRETS.values(), *STEERING.values()]:
        assert value not in out.decode()
    assert not set(SECRETS) & set(seen)
    assert seen["LANG"] == "C.UTF-8" and seen["TZ"] == "Europe/Paris"


async def test_the_shadow_environment_has_no_secret_either(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "start")
    folder = record_folder(tmp_path, git_env(RUNNER_ENV))
    assert folder is not None
    head = git(tmp_path, "rev-parse", "HEAD").strip()
    for keep_objects in (True, False):
        shadow = Shadow(folder, tmp_path, head, keep_objects=keep_objects)
        try:
            env = shadow.env(RUNNER_ENV)
        finally:
            shadow.close()
        assert not set(SECRETS) & set(env)
        for value in [*SECRETS.values(), *STEERING.values()]:
            assert value not in repr(env)


def _repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


def _plant_hook(repo: Path, name: str, marker: Path) -> None:
    hook = repo / ".git" / "hooks" / name
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    hook.chmod(0o755)


async def test_a_hook_the_repository_holds_never_runs(tmp_path: Path) -> None:
    repo, marker = _repo(tmp_path / "r"), tmp_path / "hook-ran"
    _plant_hook(repo, "post-checkout", marker)
    git(repo, "checkout", "-q", "-b", "plain")  # plain git runs it: the hook works
    assert marker.exists()
    marker.unlink()
    code, _, err = await run_git(repo, git_env(KEPT), "checkout", "-q", "-b", "guarded")
    assert code == 0, err
    assert not marker.exists()


async def test_an_fsmonitor_the_repository_configures_never_runs(tmp_path: Path) -> None:
    repo, marker = _repo(tmp_path / "r"), tmp_path / "fsmonitor-ran"
    git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    git(repo, "status", "--short")  # plain git runs it
    assert marker.exists()
    marker.unlink()
    code, _, err = await run_git(repo, git_env(KEPT), "status", "--short")
    assert code == 0, err
    assert not marker.exists()


async def test_the_runners_git_fetches_nothing_by_any_protocol(tmp_path: Path) -> None:
    source, repo = _repo(tmp_path / "source"), _repo(tmp_path / "r")
    for url in (str(source), f"file://{source}"):
        code, _, err = await run_git(repo, git_env(KEPT), "fetch", "-q", url, "HEAD")
        assert code != 0 and "not allowed" in err, err


async def test_an_excludes_file_the_repository_configures_hides_nothing(tmp_path: Path) -> None:
    repo, excludes = _repo(tmp_path / "r"), tmp_path / "excludes"
    excludes.write_text("hidden.txt\n", encoding="utf-8")
    git(repo, "config", "core.excludesFile", str(excludes))
    (repo / "hidden.txt").write_text("the agent's change\n", encoding="utf-8")
    assert "hidden.txt" not in git(repo, "status", "--short")  # plain git hides it
    code, out, err = await run_git(repo, git_env(KEPT), "status", "--short")
    assert code == 0, err
    assert "?? hidden.txt" in out.decode()


async def _staged_after_add(repo: Path, *pathspec: str) -> tuple[str, bytes]:
    """What `Shadow.add` said, and the names staged against HEAD."""
    found = record_folder(repo, git_env(KEPT))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        await shadow.must(KEPT, "read-tree", "HEAD")
        said = await shadow.add(KEPT, *pathspec)
        staged = await shadow.must(KEPT, "diff", "--cached", "--name-only", "HEAD")
    finally:
        shadow.close()
    return said, staged


async def test_a_shadows_pathspecs_are_from_the_work_trees_top_wherever_the_runner_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path / "r")
    (repo / "sub").mkdir()
    (repo / "top.txt").write_text("top\n", encoding="utf-8")
    (repo / "sub" / "top.txt").write_text("below\n", encoding="utf-8")
    monkeypatch.chdir(repo / "sub")  # the runner started below the work tree's top
    assert await _staged_after_add(repo, "top.txt") == ("", b"top.txt\n")


@pytest.mark.parametrize("committed", [True, False])
async def test_an_embedded_repository_is_no_problem_of_the_add(
    tmp_path: Path, committed: bool
) -> None:
    """Git warns about an embedded repository (with a commit), or cannot add one without: it
    says so and `fatal: adding files failed`; neither is a problem the runner reports."""
    repo = _repo(tmp_path / "r")
    inner = repo / "inner"
    inner.mkdir()
    git(inner, "init", "-q")
    if committed:
        (inner / "x.txt").write_text("x\n", encoding="utf-8")
        git(inner, "add", "-A")
        git(inner, "commit", "-q", "-m", "inner")
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    said, staged = await _staged_after_add(repo, ".")
    assert said == ""
    assert staged.startswith(b"inner\n" if committed else b"new.txt") and b"new.txt" in staged


async def test_an_embedded_repository_beside_one_without_a_commit_is_no_problem(
    tmp_path: Path,
) -> None:
    """Git's exit is 1 (the one without a commit), and its warning about the other comes with
    a page of `hint:` lines: neither is a problem of the runner's add."""
    repo = _repo(tmp_path / "r")
    for name, committed in (("cloned", True), ("empty", False)):
        inner = repo / name
        inner.mkdir()
        git(inner, "init", "-q")
        if committed:
            (inner / "x.txt").write_text("x\n", encoding="utf-8")
            git(inner, "add", "-A")
            git(inner, "commit", "-q", "-m", "inner")
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    said, staged = await _staged_after_add(repo, ".")
    assert said == ""
    assert b"new.txt" in staged
