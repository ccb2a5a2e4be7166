"""The artifacts folder is checked before any task starts.

An `--out` that cannot be written (a folder the container's user does not own, a path through a
file) used to surface after `START`, as a task error about a prompt file named by a hash. Now the
run stops first, with exit code 2, saying which folder and why, and in a container how to run as
the owner of the mounted folder.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from runner.errors import ConfigError

__all__ = ["check_out_dir"]

CONTAINER_MARKERS = (Path("/.dockerenv"), Path("/run/.containerenv"))
"""Files Docker and Podman put in every container."""

CONTAINER_HINT = (
    "; in a container, run as the owner of the mounted folder:"
    ' docker run --user "$(id -u):$(id -g)" …'
)


def check_out_dir(out: Path, junit: Path | None = None) -> None:
    """Create `out` (and `junit`'s folder) and write a file in each, or raise ConfigError."""
    checks = [("--out", out, out, "this folder")]
    if junit is not None:
        checks.append(("--junit", junit, junit.parent, f"its folder {junit.parent}"))
    for flag, given, folder, what in checks:
        error = _unwritable(folder)
        if error is None:
            continue
        denied = error.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
        hint = CONTAINER_HINT if denied and _in_container() else ""
        raise ConfigError(
            f"{flag} {given}: cannot create or write {what}: {error.strerror or error} (pass"
            f" {flag} a folder that this user ({_user()}) can create and write{hint})"
        )


def _unwritable(folder: Path) -> OSError | None:
    """Why `folder` cannot be created or written to, or None when it can."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".agent-runner-check-", dir=folder)
        os.close(fd)
        Path(name).unlink()
    except OSError as error:
        return error
    return None


def _in_container() -> bool:
    return any(marker.exists() for marker in CONTAINER_MARKERS)


def _user() -> str:
    return f"uid {os.getuid()}" if hasattr(os, "getuid") else "the current user"
