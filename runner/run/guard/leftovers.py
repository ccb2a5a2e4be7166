"""What the agent leaves behind (DESIGN 24): the repository's git folder and the run's `--out`.

`prepare` decides, for one task, before any command runs: which paths bubblewrap binds
read-only (or pins) inside the writable folders, and what the runner records to compare at the
end, because Landlock (which grants rights per hierarchy) cannot carve a read-only hole in the
workdir, and nothing confines a degraded task. `Leftovers.trial` tries, inside the task's own
sandbox, to write under `.git` and `--out` and to rename the `.git` entry: the record says
`read-only` only for what held. `Leftovers.finish` compares, restores what changed and says
why the task fails (kind `security`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from runner.outcome import SandboxRecord
from runner.settings import environ
from runner.workspace import (
    GitPlaces,
    GitRecord,
    Item,
    digest_of,
    git_places,
    gitlink_entries,
    item_of,
    protected,
    put_back,
    record,
    run_shell,
)

__all__ = ["Leftovers", "prepare"]

GitMode = Literal["read-only", "checked", "writable", ""]
OutMode = Literal["read-only", "checked", ""]
_OUT_LIMIT = 5000
_KEEP_FILE = 1 << 20
_KEEP_TOTAL = 16 << 20
"""Contents of `--out` kept to be restored: files up to 1 MiB, 16 MiB in all (the task files
always)."""
_HASH_LIMIT = 1 << 30
_OUT_SKIPPED = ("mcp-logs",)
"""Folders of `--out` the runner itself writes while a task runs (the servers' stderr)."""
_TRIAL_TIMEOUT_S = 60.0

# `python -I -S -c _TRIAL ENTRY PATH...`: for each path, whether a write went through: a new
# file in a folder, a file opened for writing, and a rename of ENTRY (put back at once).
_TRIAL = """\
import json, os, sys
entry, paths = sys.argv[1], sys.argv[2:]
held = []
def tried(path):
    if os.path.isdir(path) and not os.path.islink(path):
        name = os.path.join(path, ".agent-runner-trial")
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        os.unlink(name)
    else:
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK))
    return path
for path in paths:
    try:
        held.append(tried(path))
    except OSError:
        pass
if entry:
    try:
        os.rename(entry, entry + ".agent-runner-trial")
        os.rename(entry + ".agent-runner-trial", entry)
        held.append(entry)
    except OSError:
        pass
print(json.dumps(held))
"""


@dataclass
class Leftovers:
    """One task's git folder and `--out`: how they are held, what was recorded."""

    git: GitMode = ""
    out: OutMode = ""
    backend: str = ""
    locked: tuple[Path, ...] = ()
    """What bubblewrap binds read-only."""
    pinned: tuple[Path, ...] = ()
    places: GitPlaces | None = None
    git_record: GitRecord | None = None
    links: dict[str, Item] | None = None
    """The `.git` entries of the index's gitlinks (submodules), when the index may change."""
    out_dir: Path | None = None
    out_record: dict[str, _Kept] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """What the trial found writable although bound read-only."""

    def stamp(self, record: SandboxRecord) -> SandboxRecord:
        """The sandbox record with `git` and `out` as they held."""
        return replace(record, git=self.git, out=self.out)

    async def trial(self, workdir: Path) -> None:
        """Under bubblewrap, inside the task's sandbox (`confine` is current): try to write what
        is bound read-only; what went through is recorded as checked, not read-only."""
        if self.backend != "bwrap" or not (self.locked or self.pinned):
            return  # nothing bound: Landlock, or no sandbox
        entry = (
            str(self.places.entry) if self.places and self.git in ("read-only", "writable") else ""
        )
        paths = [str(p) for p in self.locked]
        command = shlex.join([sys.executable, "-I", "-S", "-c", _TRIAL, entry, *paths])
        why = ""
        try:
            ran = await run_shell(
                command, cwd=workdir, env={}, input_bytes=b"", timeout_s=_TRIAL_TIMEOUT_S
            )
            why = ran.stderr.strip()[-200:]
            held = json.loads(ran.stdout.strip().splitlines()[-1])
        except (OSError, ValueError, IndexError) as error:
            why, held = why or str(error), None
        if not isinstance(held, list):
            # Nothing is claimed that was not tried: the record says checked.
            self.problems.append(f"the trial did not run ({why})")
            held = [*paths, entry]
        for path in held:
            if not path:
                continue
            self.problems.append(f"{path} was writable")
            if self.out_dir is not None and Path(path) == self.out_dir:
                self.out = "checked"
            elif self.git == "read-only":
                self.git = "checked"

    def finish(self) -> str:
        """Compare with the records and restore; why the task fails (kind `security`), or ""."""
        changes: list[str] = []
        failed: list[str] = []
        if self.git_record is not None:
            changed, broken = self.git_record.restore()
            changes += changed
            failed += broken
        if self.links is not None and self.places is not None:
            # After the config is back: the index is read by the runner's own git.
            changed, broken = _restore_links(self.links, gitlink_entries(self.places, environ()))
            changes += changed
            failed += broken
        if self.out_dir is not None and self.out_record:
            changed, broken = _restore_out(self.out_dir, self.out_record)
            changes += changed
            failed += broken
        if not changes:
            return ""
        reason = (
            "the task changed what it may not leave behind (DESIGN 24): "
            + "; ".join(changes[:20])
            + (f"; and {len(changes) - 20} more" if len(changes) > 20 else "")
            + ". Restored"
        )
        if failed:
            reason += f", but not: {'; '.join(failed[:10])}"
        return reason


def prepare(
    workdir: Path,
    rw: tuple[Path, ...],
    backend: str,
    *,
    writable_git: bool,
    out_dir: Path | None,
) -> Leftovers:
    """What to hold for a task whose commands may write `rw` (the workdir and writable folders)
    under `backend` ("" when nothing confines them and the runner only checks)."""
    confined = bool(backend)
    found = Leftovers(backend=backend)
    places = git_places(workdir)
    if places is not None and _reachable(places, rw, confined):
        found.places = places
        found.git_record = record(places, rw if confined else None)
        if backend != "bwrap" or writable_git:  # the index may change: submodules are compared
            found.links = gitlink_entries(places, environ())
        if backend == "bwrap":
            locked, pinned = protected(places, writable_git)
            found.locked += tuple(p for p in locked if _inside(p, rw))
            found.pinned += tuple(p for p in pinned if _inside(p, rw))
            found.git = "writable" if writable_git else "read-only"
        else:
            found.git = "writable" if writable_git else "checked"
    elif places is not None:
        # The git folder lies above the workdir, where commands cannot write; but a `.git` made
        # in the workdir is the one git finds first when it runs there: it is checked.
        inner = GitPlaces(workdir.resolve() / ".git", places.git_dir, places.common_dir)
        found.git_record = record(inner, rw)
        found.git = "read-only"
    if out_dir is not None:
        out = out_dir.resolve()
        if _inside(out, rw) or not confined:
            out.mkdir(parents=True, exist_ok=True)  # before any command could make it its own
            found.out_dir = out
            # Landlock ignores `locked`; the file tools refuse it under every backend.
            found.locked += (out,)
            if backend == "bwrap":
                found.out = "read-only"
            else:
                found.out_record = _take_out(out)
                found.out = "checked"
    return found


def _reachable(places: GitPlaces, rw: tuple[Path, ...], confined: bool) -> bool:
    paths = (places.entry.parent, *places.folders())
    return not confined or any(_inside(p, rw) for p in paths)


def _inside(path: Path, roots: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


@dataclass(frozen=True)
class _Kept:
    """A file of `--out` as the task found it."""

    item: Item
    """Its kind, and its bytes when kept (the task files, small files)."""
    stat: tuple[int, int, int, int]
    """Size, inode, modification and change time (which no one can set back by hand, as they can
    the modification time): unchanged means not read again."""
    digest: str | None
    """The SHA-256 of its bytes (session logs too, read in chunks), to see that a log only grew."""


def _take_out(out: Path) -> dict[str, _Kept]:
    """The files under `out` (but `mcp-logs/`), bounded: contents are kept for the task files
    and small files up to a total, hashed for session logs, else only their size and times."""
    kept: dict[str, _Kept] = {}
    budget = _KEEP_TOTAL
    stack = [out]
    while stack and len(kept) < _OUT_LIMIT:
        folder = stack.pop()
        try:
            children = sorted(folder.iterdir())[:_OUT_LIMIT]
        except OSError:
            continue
        for child in children:
            if folder == out and child.name in _OUT_SKIPPED:
                continue
            try:
                info = child.lstat()
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(child)
                continue
            small = info.st_size <= _KEEP_FILE and (
                budget >= info.st_size or child.relative_to(out).parts[0] == "tasks"
            )
            if small or not stat.S_ISREG(info.st_mode):
                item = item_of(child)
            else:  # too large to keep: its kind and mode, and a digest when it is a log
                item = Item("file", stat.S_IMODE(info.st_mode))
            budget -= len(item.data or b"")
            log = child.suffix == ".jsonl" and info.st_size <= _HASH_LIMIT
            digest = digest_of(child, info.st_size) if log else None
            kept[str(child)] = _Kept(item, _stat_key(info), digest or (item.digest or None))
    return kept


def _restore_out(out: Path, before: dict[str, _Kept]) -> tuple[list[str], list[str]]:
    """Files of `--out` that were there at the start: changed or gone ones are put back (a
    session log may grow: another task of the run appends to its own)."""
    changes: list[str] = []
    failed: list[str] = []
    for key, old in before.items():
        path = Path(key)
        if _unchanged(path, old):
            continue
        gone = "removed" if not os.path.lexists(path) else "changed"
        changes.append(f"{path.relative_to(out.parent)} {gone}")
        if old.item.kind == "file" and old.item.data is None:
            failed.append(f"{path}: not kept (over {_KEEP_FILE} bytes)")
            continue
        problem = put_back(path, old.item)
        if problem:
            failed.append(f"{path}: {problem}")
    return changes, failed


def _stat_key(info: os.stat_result) -> tuple[int, int, int, int]:
    """What `_Kept.stat` holds: equal keys mean the file was not touched."""
    return (info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


def _unchanged(path: Path, old: _Kept) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    if old.item.kind != "file" or not stat.S_ISREG(info.st_mode):
        return old.item.same(item_of(path))
    if _stat_key(info) == old.stat:
        return True
    size = old.stat[0]
    if old.digest is None or info.st_size < size or (info.st_mode ^ old.item.mode) & 0o111:
        return False
    # The same bytes (only touched), or a log that only grew: its first `size` bytes hash the same.
    return digest_of(path, size) == old.digest and (path.suffix == ".jsonl" or info.st_size == size)


def _restore_links(before: dict[str, Item], now: dict[str, Item]) -> tuple[list[str], list[str]]:
    """Submodules' `.git` entries that appeared or changed go; changed ones come back."""
    changes: list[str] = []
    failed: list[str] = []
    for key, item in now.items():
        old = before.get(key, Item("absent"))
        if old.same(item):
            continue
        changes.append(f"{key} {'added' if old.kind == 'absent' else 'changed'} (a submodule's)")
        problem = put_back(Path(key), old) if old.kind != "absent" else _drop(Path(key))
        if problem:
            failed.append(f"{key}: {problem}")
    return changes, failed


def _drop(path: Path) -> str:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as error:
        return str(error)
    return ""
