"""The repository's git folder is not the agent's (DESIGN 24): find it, record it, restore it.

After a task, the workflow's next step (`git status`, `git commit`, a create-pull-request action)
runs git in the checkout, outside any sandbox, with its secrets. Whatever the agent planted in
the git folder would run there: `core.fsmonitor`, `core.hooksPath`, a filter in `config`, a
`hooks/pre-commit`, `info/attributes`, a `.git` file or folder of its own in place of the
repository's. So:

- `git_places` finds the repository holding a workdir without running git (its config is not
  trusted): the `.git` entry, the git folder it names and the common folder;
- `protected` says what bubblewrap binds read-only (or, with `sandbox.git: writable`, what it
  pins and binds read-only inside the writable git folder);
- `record` takes, before the task, what git reads and runs from there: the entry's kind and
  target, `config`, `config.worktree`, `commondir`, `hooks/` and `info/` of the common folder
  and of the git folder, and the same files of every git folder under `worktrees/` and
  `modules/`. `GitRecord.restore` compares them at the end, puts back what changed and names
  each change.

Everything there is hostile: nothing is followed (lstat, O_NOFOLLOW), nothing but regular files
is opened (O_NONBLOCK too: a FIFO does not block), and walks, reads and file sizes are bounded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.workspace.git.worktree import WORKTREE_PREFIX

__all__ = [
    "GitPlaces",
    "GitRecord",
    "Item",
    "git_places",
    "item_of",
    "protected",
    "put_back",
    "record",
    "digest_of",
]

_GITFILE_LIMIT = 4096
"""A `.git` file (and `commondir`) holds one line."""
_FILE_LIMIT = 1 << 20
"""Files up to this size are kept to be restored; larger ones are fingerprinted."""
_ENTRY_LIMIT = 5000
"""How many entries one record holds; a folder beyond it is recorded as too large."""
_DEPTH_LIMIT = 8
_CONTROL_FILES = ("config", "config.worktree", "commondir")
_CONTROL_TREES = ("hooks", "info")
_NESTED = ("worktrees", "modules")
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class GitPlaces:
    """Where the repository holding a workdir keeps what git reads."""

    entry: Path
    """The `.git` entry (a folder, or a file naming the git folder) at the work tree's top."""
    git_dir: Path
    """The git folder the entry names (itself when it is a folder)."""
    common_dir: Path
    """The repository's git folder (`commondir` of a linked worktree's; else `git_dir`)."""

    def folders(self) -> tuple[Path, ...]:
        return tuple(dict.fromkeys((self.common_dir, self.git_dir)))


def git_places(workdir: Path) -> GitPlaces | None:
    """The repository at or above `workdir`: the nearest `.git` entry, read by hand."""
    workdir = workdir.resolve()
    for folder in (workdir, *workdir.parents):
        entry = folder / ".git"
        try:
            info = entry.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            target = entry.resolve()
            return GitPlaces(entry, target, _common(target)) if target.is_dir() else None
        if stat.S_ISDIR(info.st_mode):
            return GitPlaces(entry, entry, _common(entry))
        if not stat.S_ISREG(info.st_mode):
            return None
        text = _read(entry, _GITFILE_LIMIT)
        line = text.decode("utf-8", errors="replace").strip() if text else ""
        if not line.startswith("gitdir:"):
            return None
        git_dir = _folder(folder, line.removeprefix("gitdir:"))
        return GitPlaces(entry, git_dir, _common(git_dir)) if git_dir else None
    return None


def _common(git_dir: Path) -> Path:
    text = _read(git_dir / "commondir", _GITFILE_LIMIT)
    common = _folder(git_dir, text.decode("utf-8", errors="replace")) if text else None
    return common or git_dir


def _folder(base: Path, name: str) -> Path | None:
    """The folder a `.git` file or `commondir` names, relative to `base`; None when it names
    none (empty, missing, not a folder, a path the system refuses as too long)."""
    name = name.strip()
    if not name:
        return None
    try:
        found = (base / name).resolve()
        return found if found.is_dir() else None
    except (OSError, ValueError):
        return None


def protected(places: GitPlaces, writable: bool) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    """(bound read-only, bound onto themselves read-write) for bubblewrap: by default the entry
    and both git folders; with `writable` the entry and folders are pinned (a mount point cannot
    be renamed or replaced) and only what git runs from is read-only."""
    entry = () if places.entry.is_symlink() else (places.entry,)
    folders = places.folders()
    if not writable:
        return (*entry, *(f for f in folders if f != places.entry)), ()
    locked = [f / name for f in folders for name in (*_CONTROL_FILES, *_CONTROL_TREES)]
    return tuple(p for p in locked if os.path.lexists(p)), tuple(dict.fromkeys((*entry, *folders)))


@dataclass(frozen=True)
class Item:
    """One recorded entry."""

    kind: str
    """`file`, `dir`, `symlink`, `other` or `absent`."""
    mode: int = 0
    data: bytes | None = None
    """A file's bytes (None over the size limit), a symlink's target."""
    digest: str = ""
    """A file's fingerprint: the SHA-256 of its bytes, or of its size, inode and time when large."""
    ident: tuple[int, int] = (0, 0)
    """A folder's device and inode: the entry's folder is found again if it was moved aside."""

    def same(self, other: Item) -> bool:
        if self.kind != other.kind:
            return False
        if self.kind == "file":
            return self.digest == other.digest and (self.mode & 0o111) == (other.mode & 0o111)
        if self.kind == "dir" and (self.ident != (0, 0) or other.ident != (0, 0)):
            return self.ident == other.ident
        return self.data == other.data


@dataclass
class GitRecord:
    """What git reads and runs from a repository, as it was when recorded."""

    places: GitPlaces
    items: dict[str, Item]
    """By path: `.git` for the entry, else the path of a file or folder inside a git folder."""
    within: tuple[Path, ...] | None = None
    """Only git folders inside these are recorded (and so ever restored): what commands could
    write. None: every one (nothing confines the commands)."""

    def restore(self) -> tuple[list[str], list[str]]:
        """Put back what changed: (each change, what could not be put back)."""
        now = _take(self.places, self.within)
        changes: list[str] = []
        failed: list[str] = []
        entry = str(self.places.entry)
        if entry in self.items and not self.items[entry].same(now[entry]):
            # The entry first: a folder moved aside comes back, and its contents are compared.
            changes.append(_describe(self._label(entry), self.items[entry], now[entry]))
            failed += self._restore_entry(now[entry])
            now = _take(self.places, self.within)
        keys = [k for k in _diff(self, now) if k != entry]  # the entry is named above
        changes += [_describe(self._label(k), self.items.get(k), now.get(k)) for k in keys]
        # A folder that is still a folder is never a key (only the entry's has an identity).
        absent = Item("absent")
        for key in sorted(keys, key=lambda k: -k.count("/")):
            if now.get(key, absent).kind != "absent":  # never below a link: the walk stops there
                _remove(Path(key))
        for key in keys:  # sorted: a folder before what it holds
            before = self.items.get(key, absent)
            if before.kind != "absent":
                problem = _put_back(Path(key), before)
                if problem:
                    failed.append(f"{self._label(key)}: {problem}")
        return changes, failed

    def _restore_entry(self, now: Item) -> list[str]:
        before = self.items[str(self.places.entry)]
        entry = self.places.entry
        moved = _find_moved(entry.parent, before.ident) if before.kind == "dir" else None
        if now.kind != "absent":
            _remove(entry)
        if before.kind == "absent":
            return []  # a `.git` the agent made where there was none
        if moved is not None:
            moved.rename(entry)
            return []
        problem = _put_back(entry, before)
        return [f"{entry}: {problem}"] if problem else []

    def _label(self, key: str) -> str:
        path = Path(key)
        top = self.places.entry.parent
        return str(path.relative_to(top)) if path.is_relative_to(top) else key


def record(places: GitPlaces, within: tuple[Path, ...] | None = None) -> GitRecord:
    """What git reads and runs from `places`, now (before the agent runs): the entry, and the
    git folders that lie inside `within` (None: all of them)."""
    return GitRecord(places, _take(places, within), within)


def _diff(record: GitRecord, now: dict[str, Item]) -> list[str]:
    absent = Item("absent")
    keys = sorted(set(record.items) | set(now))
    return [k for k in keys if not record.items.get(k, absent).same(now.get(k, absent))]


def _describe(label: str, before: Item | None, now: Item | None) -> str:
    was = before.kind if before else "absent"
    is_ = now.kind if now else "absent"
    if was == "absent":
        return f"{label} added ({is_})"
    if is_ == "absent":
        return f"{label} removed"
    if was != is_:
        return f"{label} replaced (a {was}, now a {is_})"
    if was == "dir":
        return f"{label} replaced by another folder"
    return f"{label} changed"


def _take(places: GitPlaces, within: tuple[Path, ...] | None) -> dict[str, Item]:
    items: dict[str, Item] = {}
    if within is None or any(places.entry.is_relative_to(root) for root in within):
        items[str(places.entry)] = _item(places.entry, entry=True)
    budget = [_ENTRY_LIMIT]
    seen: set[Path] = set()
    for folder in places.folders():
        if within is None or any(folder.is_relative_to(root) for root in within):
            _take_git_dir(folder, items, budget, seen, 0)
    return items


def _take_git_dir(
    folder: Path, items: dict[str, Item], budget: list[int], seen: set[Path], depth: int
) -> None:
    if folder in seen or depth > _DEPTH_LIMIT:
        return
    seen.add(folder)
    for name in _CONTROL_FILES:
        items[str(folder / name)] = _item(folder / name)
    for name in _CONTROL_TREES:
        for path in _walk(folder / name, budget):
            items[str(path)] = _item(path)
    for name in _NESTED:
        for nested in _git_dirs_under(folder / name, budget):
            # The runner's own worktrees come and go while tasks run beside this one.
            if name == "worktrees" and nested.name.startswith(WORKTREE_PREFIX):
                continue
            _take_git_dir(nested, items, budget, seen, depth + 1)


def _git_dirs_under(folder: Path, budget: list[int], depth: int = 0) -> Iterator[Path]:
    """Git folders below `worktrees/` or `modules/` (a submodule's name may hold slashes)."""
    if depth > _DEPTH_LIMIT:
        return
    for path in _children(folder, budget):
        if not _is_dir(path) or path.name in ("objects", "refs", "logs"):
            continue
        if os.path.lexists(path / "HEAD") or os.path.lexists(path / "config"):
            yield path
        else:
            yield from _git_dirs_under(path, budget, depth + 1)


def _walk(root: Path, budget: list[int], depth: int = 0) -> Iterator[Path]:
    """`root` and what is below it, without following a link; bounded by `budget`."""
    yield root
    if depth > _DEPTH_LIMIT:
        return
    for child in _children(root, budget):
        yield from _walk(child, budget, depth + 1)


def _children(folder: Path, budget: list[int]) -> Iterator[Path]:
    """What a folder (not a link to one) holds, by name, each paid from `budget`: nothing more
    once it is spent."""
    if not _is_dir(folder):
        return
    try:
        with os.scandir(folder) as entries:
            children = sorted(entries, key=lambda e: e.name)
    except OSError:
        return
    for child in children:
        budget[0] -= 1
        if budget[0] < 0:
            return
        yield Path(child.path)


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _item(path: Path, entry: bool = False) -> Item:
    try:
        info = path.lstat()
    except OSError:
        return Item("absent")
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):
            return Item("symlink", data=os.fsencode(path.readlink()))
        return Item("symlink")
    if stat.S_ISDIR(mode):
        return Item(
            "dir", stat.S_IMODE(mode), ident=(info.st_dev, info.st_ino) if entry else (0, 0)
        )
    if not stat.S_ISREG(mode):
        return Item("other", stat.S_IMODE(mode))
    if info.st_size > _FILE_LIMIT:
        large = f"{info.st_size}:{info.st_ino}:{info.st_mtime_ns}".encode()
        return Item("file", stat.S_IMODE(mode), None, "large:" + hashlib.sha256(large).hexdigest())
    data = _read(path, _FILE_LIMIT)
    if data is None:
        return Item("other", stat.S_IMODE(mode))
    return Item("file", stat.S_IMODE(mode), data, hashlib.sha256(data).hexdigest())


def item_of(path: Path) -> Item:
    """What `path` is now, as a record keeps it (a file's bytes up to the size limit)."""
    return _item(path)


def digest_of(path: Path, limit: int) -> str | None:
    """The SHA-256 of the first `limit` bytes of the regular file at `path`, read in chunks (so a
    large log costs no memory); None when it is not a regular file or cannot be read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            digest.update(chunk)
            left -= len(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def put_back(path: Path, before: Item) -> str:
    """Replace whatever is at `path` by `before`; what went wrong, or ""."""
    _remove(path)
    return _put_back(path, before)


def _read(path: Path, limit: int) -> bytes | None:
    """A regular file's first `limit` bytes, or None (not a regular file, unreadable)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 16))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if _is_dir(path):
            shutil.rmtree(path)  # does not follow links inside
        else:
            path.unlink()


def _find_moved(folder: Path, ident: tuple[int, int]) -> Path | None:
    """The entry's original folder if the agent moved it aside beside the entry."""
    try:
        with os.scandir(folder) as entries:
            for count, child in enumerate(entries):
                if count > _ENTRY_LIMIT:
                    break
                info = child.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) == ident:
                    return Path(child.path)
    except OSError:
        return None
    return None


def _put_back(path: Path, before: Item) -> str:
    """Recreate `before` at `path` (nothing is there now); what went wrong, or ""."""
    parent = path.parent
    if not _is_dir(parent):
        return "its folder is gone or not a folder"
    try:
        if before.kind == "dir":
            path.mkdir(mode=before.mode or 0o755)
        elif before.kind == "symlink" and before.data is not None:
            path.symlink_to(os.fsdecode(before.data))
        elif before.kind == "file" and before.data is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(before.data)
            path.chmod(before.mode)
        else:
            return f"a {before.kind} that was not kept (over {_FILE_LIMIT} bytes or unreadable)"
    except OSError as error:
        return str(error)
    return ""
