"""The runner's own git (runner.workspace.git.gitsafe, DESIGN 18): what its git processes see, how
they end, where the repository is recorded from, and what a shadow git folder reads and writes."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import uuid
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.workspace.git import gitsafe
from runner.workspace.git.gitsafe import (
    GitError,
    GitFolder,
    Shadow,
    git_env,
    record_folder,
    run_git,
)
from tests.conftest import git, processes_mentioning
from tests.fakes import forkpoint

pytestmark = pytest.mark.anyio

RUNNER_ENV = {
    "PATH": os.environ["PATH"],
    "LANG": "C.UTF-8",
    "TZ": "Europe/Paris",
    "HOME": "/root-of-the-runner",
    "OPENAI_API_KEY": "sk-secret-0123456789",
    "GIT_DIR": "/elsewhere/.git",
}


def _alias(name: str, program: str) -> dict[str, str]:
    """Environment that makes `git NAME` run PROGRAM, with the environment git was given."""
    return {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"alias.{name}"} | {
        "GIT_CONFIG_VALUE_0": f"!{program}"
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


async def _until(condition: object, what: str) -> None:
    for _ in range(600):  # bounded: 60 s
        if condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


async def test_git_and_its_programs_see_only_the_minimal_environment(repo: Path) -> None:
    env = git_env(RUNNER_ENV, GIT_EXTRA="kept", **_alias("e", "env"))
    code, out, err = await run_git(repo, env, "e")
    assert code == 0, err
    seen = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
    assert "OPENAI_API_KEY" not in seen and seen.get("GIT_DIR") != "/elsewhere/.git"
    assert seen["PATH"].endswith(RUNNER_ENV["PATH"]) and seen["LANG"] == "C.UTF-8"
    assert seen["TZ"] == "Europe/Paris" and seen["LC_ALL"] == "C"
    assert seen["HOME"] == seen["XDG_CONFIG_HOME"] == "/nonexistent/agent-runner"
    assert seen["GIT_CONFIG_NOSYSTEM"] == "1" and seen["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert seen["GIT_EXTRA"] == "kept"
    # No system attributes, no replaced objects, no prompt for a password.
    assert seen["GIT_ATTR_NOSYSTEM"] == seen["GIT_NO_REPLACE_OBJECTS"] == "1"
    assert seen["GIT_TERMINAL_PROMPT"] == "0"
    for who in ("AUTHOR", "COMMITTER"):
        code, out, _ = await run_git(repo, env, "var", f"GIT_{who}_IDENT")
        assert out.decode().startswith("agent-runner <agent-runner@localhost>")


async def test_a_replaced_object_is_read_as_stored(repo: Path) -> None:
    (repo / "evil.txt").write_text("evil\n", encoding="utf-8")
    evil = git(repo, "hash-object", "-w", "evil.txt").strip()
    git(repo, "replace", git(repo, "rev-parse", "HEAD:a.txt").strip(), evil)
    assert git(repo, "show", "HEAD:a.txt") == "evil\n"  # plain git follows the replacement
    _, out, _ = await run_git(repo, git_env(RUNNER_ENV), "show", "HEAD:a.txt")
    assert out == b"a\n"


async def test_an_error_naming_a_non_utf8_path_is_read_not_raised(repo: Path) -> None:
    code, _, err = await run_git(repo, git_env(RUNNER_ENV), "show", os.fsdecode(b"HEAD:n\xff"))
    assert code == 128 and "n\ufffd" in err, err


def test_the_environment_keeps_only_what_the_runner_has() -> None:
    env = git_env({"PATH": "/bin"})
    assert env["PATH"] == "/bin" and "LANG" not in env and "TZ" not in env


async def test_a_git_command_runs_in_its_own_session_and_reads_its_stdin(repo: Path) -> None:
    session = "python3 -c 'import os; print(os.getsid(0))'"
    env = git_env(RUNNER_ENV, **_alias("s", session))
    code, out, _ = await run_git(repo, env, "s")
    assert code == 0 and int(out) != os.getsid(0)
    _, typed, _ = await run_git(repo, env, "hash-object", "--stdin", stdin=b"typed\n")
    _, empty, _ = await run_git(repo, env, "hash-object", "--stdin")
    assert typed.strip().decode() == hashlib.sha1(b"blob 6\0typed\n").hexdigest()
    assert typed != empty and empty.strip() == b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


async def test_a_failing_command_gives_its_exit_code_and_stripped_error(repo: Path) -> None:
    code, out, err = await run_git(repo, git_env(RUNNER_ENV), "rev-parse", "--verify", "nope")
    assert code == 128 and out == b"" and err == "fatal: Needed a single revision"
    code, out, err = await run_git(repo, git_env(RUNNER_ENV), "diff", "--quiet", "HEAD")
    assert (code, out, err) == (0, b"", "")
    (repo / "a.txt").write_text("changed\n", encoding="utf-8")
    code, _, _ = await run_git(repo, git_env(RUNNER_ENV), "diff", "--quiet", "HEAD")
    assert code == 1


async def test_without_git_on_path_the_error_says_to_install_it(repo: Path) -> None:
    env = git_env({"PATH": str(repo / "no-bin")})
    with pytest.raises(ConfigError, match="git is not installed"):
        await run_git(repo, env, "status")
    with pytest.raises(ConfigError, match="git is not installed"):
        record_folder(repo, env)


async def test_a_command_past_its_time_is_killed_with_its_group(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"{uuid.uuid4().int % 10**9}"
    monkeypatch.setattr(gitsafe, "GIT_TIMEOUT_S", 0.5)
    env = git_env(RUNNER_ENV, **_alias("slow", f"sleep 600.{marker} & sleep 700.{marker}; :"))
    code, out, err = await run_git(repo, env, "slow")
    assert (code, out, err) == (-1, b"", "git slow took over 0.5s")
    await _until(lambda: not processes_mentioning(marker), "the sleeps were killed")


async def test_a_cancelled_command_is_killed_with_its_group(repo: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**9}"
    env = git_env(RUNNER_ENV, **_alias("slow", f"sleep 600.{marker} & sleep 700.{marker}"))
    running = asyncio.create_task(run_git(repo, env, "slow"))
    await _until(lambda: len(processes_mentioning(marker)) >= 2, "both sleeps started")
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await _until(lambda: not processes_mentioning(marker), "the sleeps were killed")


async def test_a_time_limit_expiring_as_git_starts_kills_its_group(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit lands just after git's fork (tests/fakes/forkpoint.py), once the alias's child
    exists and holds git's pipes: the child is killed with git instead of running to its end."""
    marker = f"{uuid.uuid4().int % 10**9}"
    env = git_env(RUNNER_ENV, **_alias("slow", f"touch ready; sleep 4.{marker}; touch finished"))
    fork_point = forkpoint.expire_after_the_fork(monkeypatch)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as limit:
            fork_point.arm(limit, repo / "ready")
            await run_git(repo, env, "slow")
    assert fork_point.fired(), "the limit was never set to expire"
    await _until(lambda: not processes_mentioning(marker), "the alias's sleep was killed")
    assert not (repo / "finished").exists()


def test_the_folder_is_recorded_from_anywhere_in_the_work_tree(repo: Path) -> None:
    (repo / "sub" / "deeper").mkdir(parents=True)
    found = record_folder(repo / "sub" / "deeper", git_env(RUNNER_ENV))
    assert found == GitFolder(repo.resolve(), (repo / ".git").resolve(), (repo / ".git").resolve())
    assert found.object_format == "sha1"
    assert record_folder(repo.parent, git_env(RUNNER_ENV)) is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.top = repo.parent  # type: ignore[misc]


def test_a_work_tree_whose_name_is_not_utf8_is_recorded(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"r\xff")
    root.mkdir()
    git(root, "init", "-q")
    found = record_folder(root, git_env(RUNNER_ENV))
    assert found is not None and found.top == root.resolve()


def test_a_git_folder_that_never_answers_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `.git` whose HEAD is a named pipe: git opens it and waits for a writer that never comes.
    for name in ("objects", "refs"):
        (tmp_path / ".git" / name).mkdir(parents=True)
    os.mkfifo(tmp_path / ".git" / "HEAD")
    monkeypatch.setattr(gitsafe, "GIT_TIMEOUT_S", 1.0)
    assert record_folder(tmp_path, git_env(RUNNER_ENV)) is None


def test_a_linked_worktree_records_its_own_and_the_common_git_folder(repo: Path) -> None:
    tree = repo.parent / "tree"
    git(repo, "worktree", "add", "-q", "--detach", str(tree))
    found = record_folder(tree, git_env(RUNNER_ENV))
    assert found is not None and found.top == tree.resolve()
    assert found.git_dir == (repo / ".git" / "worktrees" / "tree").resolve()
    assert found.common_dir == (repo / ".git").resolve()


async def test_a_sha256_repository_gets_a_sha256_shadow(tmp_path: Path) -> None:
    root = tmp_path / "repo256"
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256")
    (root / "a.txt").write_text("a\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    found = record_folder(root, git_env(RUNNER_ENV))
    assert found is not None and found.object_format == "sha256"
    head = git(root, "rev-parse", "HEAD").strip()
    shadow = Shadow(found, root, head)
    try:
        listed = await shadow.must(RUNNER_ENV, "ls-tree", "--name-only", "HEAD")
        assert listed == b"a.txt\n"
    finally:
        shadow.close()
    assert not shadow.path.exists()
    shadow.close()  # twice: a `finally` after a failed close, nothing raised


async def test_a_shadow_reads_no_config_of_the_repositorys_and_leaves_its_index(
    repo: Path,
) -> None:
    git(repo, "config", "user.name", "from-the-repo")
    git(repo, "config", "core.excludesFile", str(repo / "global-excludes"))
    (repo / "global-excludes").write_text("a.txt\n", encoding="utf-8")
    index = (repo / ".git" / "index").read_bytes()
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        (repo / "b.txt").write_text("b\n", encoding="utf-8")
        assert await shadow.add(RUNNER_ENV, ".") == ""
        staged = await shadow.must(RUNNER_ENV, "diff", "--cached", "--name-only", "HEAD")
        assert staged == b"b.txt\nglobal-excludes\n"
        assert await shadow.run(RUNNER_ENV, "config", "user.name") == (1, b"", "")
    finally:
        shadow.close()
    assert (repo / ".git" / "index").read_bytes() == index


async def test_a_shadow_honours_the_repositorys_info_exclude(repo: Path) -> None:
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("*.log\n", encoding="utf-8")
    (repo / "build.log").write_text("noise\n", encoding="utf-8")
    (repo / "kept.txt").write_text("kept\n", encoding="utf-8")
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        assert await shadow.add(RUNNER_ENV, ".") == ""
        added = await shadow.must(RUNNER_ENV, "diff", "--cached", "--name-only", "HEAD")
        assert added == b"kept.txt\n"
    finally:
        shadow.close()


@pytest.mark.parametrize("keep_objects", [True, False])
async def test_objects_go_to_the_repository_only_when_kept(repo: Path, keep_objects: bool) -> None:
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    head = git(repo, "rev-parse", "HEAD").strip()
    # Kept by default.
    shadow = (
        Shadow(found, repo, head) if keep_objects else Shadow(found, repo, head, keep_objects=False)
    )
    try:
        await shadow.must(RUNNER_ENV, "read-tree", "HEAD")
        (repo / "new.txt").write_text("a new blob\n", encoding="utf-8")
        assert await shadow.add(RUNNER_ENV, "new.txt") == ""
        tree = (await shadow.must(RUNNER_ENV, "write-tree")).decode().strip()
        # The shadow reads the repository's objects either way (HEAD's a.txt is in the tree).
        assert b"a.txt" in await shadow.must(RUNNER_ENV, "ls-tree", "--name-only", tree)
    finally:
        shadow.close()
    stored = git(repo, "cat-file", "-t", tree) if keep_objects else ""
    assert stored.strip() == ("tree" if keep_objects else "")
    if not keep_objects:
        with pytest.raises(Exception, match="exit status 128"):
            git(repo, "cat-file", "-t", tree)


async def test_must_names_the_command_and_the_folder_when_it_fails(repo: Path) -> None:
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    (repo / "sub").mkdir()
    try:
        with pytest.raises(GitError) as failed:
            await shadow.must(RUNNER_ENV, "rev-parse", "--verify", "nope", cwd=repo / "sub")
        assert str(failed.value) == (
            f"git rev-parse --verify failed in {repo / 'sub'}: fatal: Needed a single revision"
        )
        assert failed.value.exit_code == 4
        await shadow.must(RUNNER_ENV, "read-tree", "HEAD")
        with pytest.raises(GitError, match=f"git diff --quiet failed in {repo}: exit 1$"):
            (repo / "a.txt").write_text("changed\n", encoding="utf-8")
            await shadow.must(RUNNER_ENV, "diff", "--quiet")
        assert await shadow.must(RUNNER_ENV, "rev-parse", "--show-prefix", cwd=repo / "sub") == (
            b"sub/\n"
        )
        typed = await shadow.must(RUNNER_ENV, "hash-object", "--stdin", stdin=b"typed\n")
        assert typed.strip().decode() == hashlib.sha1(b"blob 6\0typed\n").hexdigest()
    finally:
        shadow.close()


async def test_add_leaves_out_an_agents_empty_repository_and_ignored_paths(repo: Path) -> None:
    (repo / ".gitignore").write_text("out/\n", encoding="utf-8")
    (repo / "out").mkdir()
    (repo / "out" / "x").write_text("x\n", encoding="utf-8")
    (repo / "nested").mkdir()
    git(repo / "nested", "init", "-q")
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        assert await shadow.add(RUNNER_ENV, ".", ":(exclude)out", ":(exclude)out/x") == ""
        staged = await shadow.must(RUNNER_ENV, "diff", "--cached", "--name-only", "HEAD")
        assert staged == b".gitignore\nnew.txt\n"
        problem = await shadow.add(RUNNER_ENV, "no-such-file")
        assert problem == "fatal: pathspec 'no-such-file' did not match any files"
    finally:
        shadow.close()


async def test_add_takes_its_pathspec_from_the_folder_it_is_given(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "in.txt").write_text("in\n", encoding="utf-8")
    (repo / "out.txt").write_text("out\n", encoding="utf-8")
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        await shadow.must(RUNNER_ENV, "read-tree", "HEAD")
        assert await shadow.add(RUNNER_ENV, ".", cwd=repo / "sub") == ""
        staged = await shadow.must(RUNNER_ENV, "diff", "--cached", "--name-only", "HEAD")
        assert staged == b"sub/in.txt\n"
    finally:
        shadow.close()


def test_gits_notice_of_ignored_paths_is_dropped_and_nothing_else() -> None:
    notice = [
        "The following paths are ignored by one of your .gitignore files:",
        "out",
        "build",
        "hint: Use -f if you really want to add them.",
        'hint: Turn this message off by running "git config advice.addIgnoredFile false"',
    ]
    assert gitsafe._without_ignored_notice([*notice]) == []
    before, after = "error: open('x'): Permission denied", "error: unable to index file 'y'"
    assert gitsafe._without_ignored_notice([before, *notice, after]) == [before, after]
    # Not a notice: a path line and a hint outside one are kept.
    assert gitsafe._without_ignored_notice(["out", "hint: x"]) == ["out", "hint: x"]
    assert gitsafe._without_ignored_notice(["hint: first", "out"]) == ["hint: first", "out"]
    # After the notice, another message's hints are kept.
    later = [*notice, after, "hint: see the docs"]
    assert gitsafe._without_ignored_notice(later) == [after, "hint: see the docs"]


@pytest.mark.parametrize(
    ("cut", "staged"),
    [(b"*.log", b"kept.txt\n"), (b"*.lo", b"build.log\nkept.txt\n")],
)
async def test_only_the_first_mebibyte_of_info_exclude_is_read(
    repo: Path, cut: bytes, staged: bytes
) -> None:
    # The limit's last bytes are `cut`: a pattern that ends there counts, whole; what lies
    # past it (the rest of `*.log`, a line naming kept.txt) does not.
    padding = b"#" * ((1 << 20) - len(cut) - 1) + b"\n"
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_bytes(padding + cut + b"*.log"[len(cut) :] + b"\nkept.txt\n")
    (repo / "build.log").write_text("noise\n", encoding="utf-8")
    (repo / "kept.txt").write_text("kept\n", encoding="utf-8")
    found = record_folder(repo, git_env(RUNNER_ENV))
    assert found is not None
    shadow = Shadow(found, repo, git(repo, "rev-parse", "HEAD").strip())
    try:
        await shadow.must(RUNNER_ENV, "read-tree", "HEAD")
        assert await shadow.add(RUNNER_ENV, ".") == ""
        added = await shadow.must(RUNNER_ENV, "diff", "--cached", "--name-only", "HEAD")
        assert added == staged
    finally:
        shadow.close()
