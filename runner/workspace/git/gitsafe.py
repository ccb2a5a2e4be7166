"""The runner's own git (DESIGN 18): commands the agent can influence, run so that it cannot.

The agent writes the work tree, and so whatever git reads from it: a `.git` file that points at
another git folder, that folder's `config` (`filter.*.clean`, `core.fsmonitor`, `diff.external`,
`core.hooksPath`, ...), `.gitattributes` that select those filters. Git runs every such program
with its own environment. So the runner's git, for a patch or `success.require.changed_files`:

- gets the minimal environment (`git_env`): PATH, LANG and TZ of the runner's, no API key, no
  token, HOME nowhere, no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`);
- never discovers its repository: the git folder is recorded before the agent runs
  (`record_folder`), and the commands run in a `Shadow`, a git folder the runner makes in a
  private temporary folder, with the recorded repository's object store and its own index,
  HEAD and a config of two lines. No repository config is read at all, so no filter, diff
  driver, textconv, fsmonitor or hook is defined, whatever `.gitattributes` ask for; the
  recorded repository's index is never written;
- gets `SAFE_CONFIG` on its command line as a second fence.

Git 2.39 (Debian 12) has no `--attr-source`; the shadow makes it unnecessary.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ConfigError, ExitCode, RunnerError
from runner.workspace.sandbox import kill_group, start_uncancelled

__all__ = [
    "GIT_TIMEOUT_S",
    "SAFE_CONFIG",
    "GitError",
    "GitFolder",
    "Shadow",
    "git_env",
    "record_folder",
    "run_git",
]

GIT_TIMEOUT_S = 300.0
"""How long one git command may take (a large checkout hashes every file once)."""
_ENV_KEEP = ("PATH", "LANG", "TZ")
_NOWHERE = "/nonexistent/agent-runner"
SAFE_CONFIG = (
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.untrackedCache=false"),
    *("-c", "core.attributesFile=/dev/null"),
    *("-c", "core.excludesFile=/dev/null"),
    *("-c", "gc.auto=0"),
    *("-c", "maintenance.auto=false"),
    *("-c", "protocol.allow=never"),
    *("-c", "submodule.recurse=false"),
)
"""Options before every git subcommand the runner runs: hooks, fsmonitor, global attributes
and excludes off; no garbage collection; no fetch of any kind (a partial clone's lazy fetch)."""
_NO_GIT = "git is not installed (not on PATH); install git or use isolation: none"
_EXCLUDE_LIMIT = 1 << 20
_WHERE = ("--show-toplevel", "--absolute-git-dir", "--git-common-dir", "--show-object-format")


class GitError(RunnerError):
    """A git command the runner needs failed (an infrastructure error, exit 4)."""

    exit_code = ExitCode.INFRASTRUCTURE


def git_env(env: Mapping[str, str], **extra: str) -> dict[str, str]:
    """The minimal environment of a runner-side git: no secret, no config but the command's."""
    kept = {name: env[name] for name in _ENV_KEEP if name in env}
    kept.update(
        LC_ALL="C",
        HOME=_NOWHERE,
        XDG_CONFIG_HOME=_NOWHERE,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_ATTR_NOSYSTEM="1",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_AUTHOR_NAME="agent-runner",
        GIT_AUTHOR_EMAIL="agent-runner@localhost",
        GIT_COMMITTER_NAME="agent-runner",
        GIT_COMMITTER_EMAIL="agent-runner@localhost",
    )
    kept.update(extra)
    return kept


async def run_git(
    cwd: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None
) -> tuple[int, bytes, str]:
    """(exit code, stdout, stderr) of `git SAFE_CONFIG ARGS` in `cwd` with exactly `env`; the
    command's process group is killed when it takes over GIT_TIMEOUT_S or is cancelled."""
    try:
        # start_uncancelled: a cancellation landing mid-start kills git's group.
        process = await start_uncancelled(
            asyncio.create_subprocess_exec(
                "git",
                *SAFE_CONFIG,
                *args,
                cwd=cwd,
                env=dict(env),
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            ),
            _kill_and_wait,
        )
    except FileNotFoundError:
        raise ConfigError(_NO_GIT) from None
    try:
        async with asyncio.timeout(GIT_TIMEOUT_S):
            out, err = await process.communicate(stdin)
    except TimeoutError:
        kill_group(process.pid)
        await process.wait()
        return -1, b"", f"git {args[0]} took over {GIT_TIMEOUT_S:g}s"
    except asyncio.CancelledError:
        kill_group(process.pid)
        await process.wait()
        raise
    return process.returncode or 0, out, err.decode("utf-8", errors="replace").strip()


async def _kill_and_wait(process: asyncio.subprocess.Process) -> None:
    kill_group(process.pid)
    await process.wait()


@dataclass(frozen=True)
class GitFolder:
    """A work tree's git folder, as found before the agent could write anything."""

    top: Path
    """The work tree's top folder."""
    git_dir: Path
    """Its git folder (for a linked worktree, `<repo>/.git/worktrees/NAME`)."""
    common_dir: Path
    """The repository's git folder: objects, refs, `info/exclude`."""
    object_format: str = "sha1"
    """`sha1` or `sha256`, for the shadow's config."""


def record_folder(folder: Path, env: Mapping[str, str]) -> GitFolder | None:
    """The git folder of the work tree holding `folder`, or None outside one. Call it only
    while `folder` holds nothing the agent wrote (before the task starts): it follows `.git`."""
    try:
        done = subprocess.run(
            ["git", *SAFE_CONFIG, "rev-parse", *_WHERE],
            cwd=folder,
            env=git_env(env),
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise ConfigError(_NO_GIT) from None
    except subprocess.TimeoutExpired:
        return None
    lines = done.stdout.decode("utf-8", errors="surrogateescape").splitlines()
    if done.returncode != 0 or len(lines) != 4:
        return None
    top, git_dir = Path(lines[0]).resolve(), Path(lines[1]).resolve()
    sha256 = lines[3] == "sha256"
    return GitFolder(top, git_dir, (folder / lines[2]).resolve(), "sha256" if sha256 else "sha1")


class Shadow:
    """A git folder of the runner's own over a recorded repository: its object store, a private
    index, HEAD at a given commit, no config of the repository's. Writes objects into the
    repository (as `git add` does; with `keep_objects=False` into itself), nothing else.
    `close()` removes it."""

    def __init__(
        self, folder: GitFolder, work_tree: Path, head: str, *, keep_objects: bool = True
    ) -> None:
        self.folder = folder
        self.work_tree = work_tree
        self.keep_objects = keep_objects
        """False: objects are written into the shadow (and go with it); the repository's are
        read through `GIT_ALTERNATE_OBJECT_DIRECTORIES`."""
        self.path = Path(tempfile.mkdtemp(prefix="agent-runner-git-"))
        for name in ("objects", "refs", "info"):
            (self.path / name).mkdir()
        sha256 = folder.object_format == "sha256"
        config = f"[core]\n\trepositoryformatversion = {int(sha256)}\n\tbare = false\n"
        if sha256:
            config += "[extensions]\n\tobjectformat = sha256\n"
        (self.path / "config").write_text(config, encoding="utf-8")
        (self.path / "HEAD").write_text(head + "\n", encoding="utf-8")
        exclude = folder.common_dir / "info" / "exclude"
        with contextlib.suppress(OSError):
            data = exclude.read_bytes()[:_EXCLUDE_LIMIT] if exclude.is_file() else b""
            (self.path / "info" / "exclude").write_bytes(data)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`git_env` pinned to this shadow and the recorded repository's objects."""
        objects = self.folder.common_dir / "objects"
        pinned = git_env(
            env,
            GIT_DIR=str(self.path),
            GIT_WORK_TREE=str(self.work_tree),
            GIT_INDEX_FILE=str(self.path / "index"),
            GIT_OBJECT_DIRECTORY=str(objects if self.keep_objects else self.path / "objects"),
        )
        if not self.keep_objects:
            pinned["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(objects)
        return pinned

    async def run(
        self,
        env: Mapping[str, str],
        *args: str,
        stdin: bytes | None = None,
        cwd: Path | None = None,
    ) -> tuple[int, bytes, str]:
        """`run_git` in the shadow, in `cwd` (default: the work tree's top)."""
        return await run_git(cwd or self.work_tree, self.env(env), *args, stdin=stdin)

    async def must(
        self,
        env: Mapping[str, str],
        *args: str,
        stdin: bytes | None = None,
        cwd: Path | None = None,
    ) -> bytes:
        """Its stdout; GitError (exit 4) naming the command when it fails."""
        code, out, err = await self.run(env, *args, stdin=stdin, cwd=cwd)
        if code != 0:
            where = cwd or self.work_tree
            raise GitError(f"git {' '.join(args[:2])} failed in {where}: {err or f'exit {code}'}")
        return out

    async def add(self, env: Mapping[str, str], *pathspec: str, cwd: Path | None = None) -> str:
        """`git add -A` of `pathspec` into the shadow's index: "" when it worked, else git's
        error. A nested repository without a commit (an agent's `git init x`) cannot be
        added; it is left out, as git leaves out what it cannot index with --ignore-errors."""
        code, _, err = await self.run(env, "add", "--ignore-errors", "-A", "--", *pathspec, cwd=cwd)
        if code == 0:
            return ""
        problems = [
            line
            for line in _without_ignored_notice(err.splitlines())
            if not line.startswith(("warning:", "hint:"))  # an embedded repository's page
            and not line.endswith("does not have a commit checked out")
            and line != "fatal: adding files failed"
        ]
        return "\n".join(problems) or ("" if err else f"git add: exit {code}")

    def close(self) -> None:
        """Remove the shadow's folder (the objects it wrote stay in the repository)."""
        shutil.rmtree(self.path, ignore_errors=True)


_IGNORED_NOTICE = "The following paths are ignored by one of your .gitignore files"


def _without_ignored_notice(lines: list[str]) -> list[str]:
    """`lines` without git's notice that a pathspec names an ignored path (its paths and hints):
    an exclude pathspec of an ignored folder (`--out` under `.gitignore`) draws it, and exit 1,
    though everything else was added."""
    kept: list[str] = []
    skipping = hinted = False
    for line in lines:
        if line.startswith(_IGNORED_NOTICE):
            skipping, hinted = True, False
        elif skipping and line.startswith("hint:"):
            hinted = True
        elif skipping and not hinted:
            pass  # one of the ignored paths
        else:
            skipping = False
            kept.append(line)
    return kept
