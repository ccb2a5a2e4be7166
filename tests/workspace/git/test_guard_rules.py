"""The `.git` guard's rules, each pinned for every instance (runner.workspace.git.guard, DESIGN 24).

The git folders here are made by hand (the guard reads them by hand, never through git): every
control file and tree of every git folder is recorded, nested git folders under `worktrees/` and
`modules/` too, nothing is followed, reads and walks are bounded, and whatever the agent made,
changed, removed or swapped is named and put back.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from runner.workspace.git.guard import (
    GitPlaces,
    Item,
    digest_of,
    git_places,
    item_of,
    protected,
    put_back,
    record,
)
from runner.workspace.git.worktree import WORKTREE_PREFIX

_CONTROL = ("config", "config.worktree", "commondir")


@pytest.fixture
def tmp_path(memory_tmp_path: Path) -> Path:
    """On the memory file system: these tests make and walk thousands of entries."""
    return memory_tmp_path


def _git_folder(folder: Path, *, head: bool = True, config: bool = True) -> Path:
    """A git folder as git leaves it, made by hand: HEAD, config, hooks/, info/, objects/."""
    (folder / "hooks").mkdir(parents=True)
    (folder / "info").mkdir()
    (folder / "objects").mkdir()
    if head:
        (folder / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    if config:
        (folder / "config").write_text("[core]\n\tbare = false\n", encoding="utf-8")
    (folder / "hooks" / "pre-commit.sample").write_text("#!/bin/sh\n", encoding="utf-8")
    (folder / "info" / "exclude").write_text("# exclude\n", encoding="utf-8")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    top = (tmp_path / "w").resolve()
    _git_folder(top / ".git")
    return top


def _places(top: Path) -> GitPlaces:
    places = git_places(top)
    assert places is not None
    return places


# --- finding the repository by hand ----------------------------------------------------------


def test_the_nearest_git_entry_wins(work: Path) -> None:
    inner = work / "a" / "b"
    _git_folder(inner / ".git")
    (inner / "c").mkdir()
    assert _places(inner / "c").entry == inner / ".git"
    assert _places(work / "a").entry == work / ".git"


def test_a_git_link_counts_only_when_it_leads_to_a_folder(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    top = tmp_path / "w"
    top.mkdir()
    (top / ".git").symlink_to(store)
    places = _places(top)
    assert (places.entry, places.git_dir, places.common_dir) == (
        top.resolve() / ".git",
        store.resolve(),
        store.resolve(),
    )
    linked = _git_folder(store / "worktrees" / "x")
    (linked / "commondir").write_text("../..\n", encoding="utf-8")
    (top / ".git").unlink()
    (top / ".git").symlink_to(linked)  # a linked worktree's git folder: its common one differs
    places = _places(top)
    assert (places.git_dir, places.common_dir) == (linked.resolve(), store.resolve())
    for target in (store / "config", tmp_path / "nowhere"):
        (top / ".git").unlink()
        (top / ".git").symlink_to(target)
        assert git_places(top) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "gitdir:",  # git: "no path in gitfile"; not the work tree itself
        "gitdir:  \n",
        "gitdir: nowhere\n",
        "git dir: ../store\n",
        "not a gitdir: ../store\n",
        "gitdir: ../st\0re\n",  # a path the system refuses
        "gitdir: " + "a" * 300 + "\n",  # a name too long
        "gitdir: " + "a/" * 2100 + "\n",  # a path too long
    ],
)
def test_a_git_file_that_names_no_git_folder_is_no_repository(tmp_path: Path, text: str) -> None:
    _git_folder(tmp_path / "store")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".git").write_text(text, encoding="utf-8")
    assert git_places(tmp_path / "w") is None


def test_a_git_file_naming_a_file_is_no_repository(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "f").write_text("x", encoding="utf-8")
    (tmp_path / "w" / ".git").write_text(f"gitdir: {tmp_path}/f\n", encoding="utf-8")
    assert git_places(tmp_path / "w") is None


def test_a_relative_gitdir_is_read_from_the_entrys_folder_not_the_workdir(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    (tmp_path / "w" / "deep").mkdir(parents=True)
    (tmp_path / "w" / ".git").write_text("gitdir:   ../store  \n", encoding="utf-8")
    places = _places(tmp_path / "w" / "deep")
    assert places.git_dir == places.common_dir == store.resolve()
    assert places.folders() == (store.resolve(),)


def test_only_the_first_4096_bytes_of_a_git_file_are_read(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    (tmp_path / "w").mkdir()
    line = f"gitdir: {store}\n".encode()
    # Byte 4097 on would make the path another, missing one if it were read.
    (tmp_path / "w" / ".git").write_bytes(line + b" " * (4096 - len(line)) + b"/missing")
    assert _places(tmp_path / "w").git_dir == store.resolve()
    (tmp_path / "w" / ".git").write_bytes(line + b" " * (4095 - len(line)) + b"/missing")
    assert git_places(tmp_path / "w") is None


def test_commondir_names_the_common_folder_when_it_is_one(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    linked = _git_folder(store / "worktrees" / "x")
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / ".git").write_text(f"gitdir: {linked}\n", encoding="utf-8")
    for text, common in (
        ("../..\n", store),
        (f"{store}\n", store),  # absolute
        ("", linked),
        ("../../missing\n", linked),
        ("../../config\n", linked),  # a file, not a folder
        ("  \n", linked),
        ("../..\0\n", linked),  # paths the system refuses
        ("x" * 300, linked),
    ):
        (linked / "commondir").write_text(text, encoding="utf-8")
        places = _places(tmp_path / "w")
        assert places.common_dir == common.resolve(), text
        assert places.folders() == tuple(dict.fromkeys((common.resolve(), linked.resolve())))


def test_a_git_folders_own_commondir_is_followed_as_git_does(work: Path, tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    (work / ".git" / "commondir").write_text(f"{store}\n", encoding="utf-8")
    places = _places(work)
    assert (places.git_dir, places.common_dir) == (work / ".git", store.resolve())
    assert str(store.resolve() / "hooks" / "pre-commit.sample") in record(places).items


# --- what bubblewrap binds -------------------------------------------------------------------


def test_a_linked_checkout_binds_its_git_file_and_both_git_folders(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    linked = _git_folder(store / "worktrees" / "x")
    (linked / "commondir").write_text("../..\n", encoding="utf-8")
    (linked / "config.worktree").write_text("", encoding="utf-8")
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {linked}\n", encoding="utf-8")
    places = _places(top)
    store, linked = store.resolve(), linked.resolve()
    assert protected(places, writable=False) == ((top / ".git", store, linked), ())
    locked, pinned = protected(places, writable=True)
    assert pinned == (top / ".git", store, linked)
    assert locked == (
        store / "config",
        store / "hooks",
        store / "info",
        linked / "config",
        linked / "config.worktree",
        linked / "commondir",
        linked / "hooks",
        linked / "info",
    )


def test_a_git_link_itself_is_never_bound_only_where_it_leads(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store").resolve()
    top = tmp_path / "w"
    top.mkdir()
    (top / ".git").symlink_to(store)
    places = _places(top)
    assert protected(places, writable=False) == ((store,), ())
    locked, pinned = protected(places, writable=True)
    assert pinned == (store,)
    assert locked == (store / "config", store / "hooks", store / "info")


# --- what is recorded ------------------------------------------------------------------------


def test_every_control_file_and_tree_of_every_git_folder_is_recorded(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    linked = _git_folder(store / "worktrees" / "x")
    (linked / "commondir").write_text("../..\n", encoding="utf-8")
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {linked}\n", encoding="utf-8")
    taken = record(_places(top)).items
    for folder in (store.resolve(), linked.resolve()):
        for name in (*_CONTROL, "hooks", "info"):
            assert str(folder / name) in taken, (folder, name)
        assert str(folder / "hooks" / "pre-commit.sample") in taken
        assert str(folder / "info" / "exclude") in taken
        assert str(folder / "objects") not in taken and str(folder / "HEAD") not in taken
    assert taken[str(top / ".git")].kind == "file"


def test_every_nested_git_folder_is_recorded_but_the_runners_own_worktrees(work: Path) -> None:
    dot = work / ".git"
    nested = [
        _git_folder(dot / "worktrees" / "other"),
        _git_folder(dot / "modules" / "lib"),
        _git_folder(dot / "modules" / "deep" / "er" / "name"),  # a name holding slashes
        _git_folder(dot / "modules" / "cfg-only", head=False),  # config but no HEAD
        _git_folder(dot / "modules" / "head-only", config=False),  # HEAD but no config
        _git_folder(dot / "modules" / f"{WORKTREE_PREFIX}sub"),  # only worktrees/ skip it
        _git_folder(dot / "modules" / "lib" / "modules" / "inner"),  # a submodule's submodule
    ]
    own = _git_folder(dot / "worktrees" / f"{WORKTREE_PREFIX}1")
    (dot / "modules" / "objects" / "x").mkdir(parents=True)
    (dot / "modules" / "objects" / "x" / "HEAD").write_text("", encoding="utf-8")
    (dot / "modules" / "plain.txt").write_text("", encoding="utf-8")
    taken = record(_places(work)).items
    for folder in nested:
        assert str(folder / "config") in taken, folder
        assert str(folder / "hooks") in taken, folder
        assert str(folder / "hooks" / "pre-commit.sample") in taken, folder
    assert not [k for k in taken if k.startswith(str(own))]
    assert not [k for k in taken if "/objects/" in k]


@pytest.mark.parametrize("skipped", ["objects", "refs", "logs"])
def test_objects_refs_and_logs_are_never_searched_for_git_folders(work: Path, skipped: str) -> None:
    hidden = _git_folder(work / ".git" / "modules" / "m" / skipped / "x")
    taken = record(_places(work)).items
    assert not [k for k in taken if k.startswith(str(hidden))]
    found = _git_folder(work / ".git" / "modules" / f"{skipped}x")
    assert str(found / "config") in record(_places(work)).items
    # A skipped folder, or a file, ends no search: the git folders named after it are found.
    (work / ".git" / "modules" / skipped).mkdir()
    (work / ".git" / "modules" / "a-file").write_text("", encoding="utf-8")
    after = _git_folder(work / ".git" / "modules" / "zz")
    assert str(after / "config") in record(_places(work)).items


def test_only_git_folders_inside_what_commands_may_write_are_recorded(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    linked = _git_folder(store / "worktrees" / "x")
    (linked / "commondir").write_text("../..\n", encoding="utf-8")
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {linked}\n", encoding="utf-8")
    places = _places(top)
    for within, entry, common, git in (
        ((top,), True, False, False),
        ((linked.resolve(),), False, False, True),
        ((store.resolve(),), False, True, True),
        ((top, store.resolve()), True, True, True),
        ((tmp_path / "else",), False, False, False),
    ):
        taken = record(places, within).items
        assert (str(top / ".git") in taken) is entry, within
        assert (str(store.resolve() / "config") in taken) is common, within
        assert (str(linked.resolve() / "config") in taken) is git, within


def test_a_deep_tree_is_recorded_to_depth_eight_and_no_deeper(work: Path) -> None:
    folder = work / ".git" / "hooks"
    for n in range(12):
        folder = folder / f"d{n}"
    folder.mkdir(parents=True)
    taken = record(_places(work)).items
    hooks = work / ".git" / "hooks"
    deepest = max(
        (Path(k) for k in taken if k.startswith(f"{hooks}/d")), key=lambda p: len(p.parts)
    )
    assert len(deepest.relative_to(hooks).parts) == 9  # `hooks` at 0, children listed to depth 8


def test_nested_git_folders_are_searched_to_depth_eight(work: Path) -> None:
    base = work / ".git" / "modules"
    for depth in (9, 10):
        _git_folder(base.joinpath(*(f"n{depth}-{i}" for i in range(depth))))
    taken = record(_places(work)).items
    assert any(k.endswith("n9-8/config") for k in taken)
    assert not any("n10-" in k for k in taken)


def test_a_tree_too_large_for_the_budget_is_cut_at_five_thousand_entries(work: Path) -> None:
    hooks = work / ".git" / "hooks"
    for n in range(5100):
        os.symlink("x", hooks / f"h{n:05}")  # links: recorded without being opened
    info = work / ".git" / "info"
    taken = record(_places(work)).items
    under_hooks = [k for k in taken if k.startswith(f"{hooks}/")]
    assert len(under_hooks) == 5000  # every entry paid for, the budget spent exactly
    assert str(info) in taken and str(info / "exclude") not in taken
    assert f"{hooks}/h04999" in taken and f"{hooks}/h05000" not in taken  # the first names


def test_a_nested_git_folder_beyond_the_budget_is_not_recorded(work: Path) -> None:
    modules = work / ".git" / "modules"
    for n in range(4998):
        os.symlink("x", work / ".git" / "hooks" / f"h{n:05}")
    _git_folder(modules / "a")
    taken = record(_places(work)).items
    assert str(modules / "a" / "config") not in taken


# --- what a record holds of each entry -------------------------------------------------------


def test_each_kind_of_entry_is_recorded_as_it_is(work: Path) -> None:
    hooks = work / ".git" / "hooks"
    (hooks / "run").write_bytes(b"#!/bin/sh\n")
    (hooks / "run").chmod(0o750)
    (hooks / "link").symlink_to("../../nowhere")
    os.mkfifo(hooks / "pipe")
    (hooks / "big").write_bytes(b"z" * ((1 << 20) + 1))
    (hooks / "limit").write_bytes(b"z" * (1 << 20))
    item = item_of(hooks / "run")
    assert (item.kind, item.mode, item.data) == ("file", 0o750, b"#!/bin/sh\n")
    assert item.digest == hashlib.sha256(b"#!/bin/sh\n").hexdigest()
    assert item_of(hooks / "link") == Item("symlink", data=b"../../nowhere")
    assert item_of(hooks / "pipe").kind == "other"
    big = item_of(hooks / "big")
    assert big.kind == "file" and big.data is None and big.digest.startswith("large:")
    assert item_of(hooks / "limit").data == b"z" * (1 << 20)
    assert item_of(hooks / "missing") == Item("absent")
    folder = item_of(hooks)
    assert (folder.kind, folder.ident) == ("dir", (0, 0))  # only the entry keeps its identity
    assert folder.mode == os.stat(hooks).st_mode & 0o7777
    entry = record(_places(work)).items[str(work / ".git")]
    info = os.stat(work / ".git")
    assert entry.ident == (info.st_dev, info.st_ino)


def test_a_large_file_rewritten_to_the_same_size_is_a_change(work: Path) -> None:
    big = work / ".git" / "hooks" / "big"
    big.write_bytes(b"a" * ((1 << 20) + 1))
    before = item_of(big)
    was = big.stat()
    big.write_bytes(b"b" * ((1 << 20) + 1))
    os.utime(big, ns=(was.st_atime_ns, was.st_mtime_ns + 1))
    assert not before.same(item_of(big))
    os.utime(big, ns=(was.st_atime_ns, was.st_mtime_ns))
    # size, inode and time: the same fingerprint (the runner never keeps the bytes)
    assert before.same(item_of(big))


def test_sameness_is_kind_bytes_exec_bits_target_or_identity() -> None:
    f = Item("file", 0o644, b"x", "d1")
    assert f.same(Item("file", 0o600, b"x", "d1"))  # only the executable bits count
    for bit in (0o100, 0o010, 0o001):
        assert not f.same(Item("file", 0o644 | bit, b"x", "d1")), oct(bit)
    assert not f.same(Item("file", 0o644, b"x", "d2"))
    assert not f.same(Item("other", 0o644))
    assert not Item("absent").same(f) and Item("absent").same(Item("absent"))
    assert Item("symlink", data=b"a").same(Item("symlink", data=b"a"))
    assert not Item("symlink", data=b"a").same(Item("symlink", data=b"b"))
    assert Item("dir", 0o755).same(Item("dir", 0o700))
    assert Item("dir", ident=(1, 2)).same(Item("dir", ident=(1, 2)))
    assert not Item("dir", ident=(1, 2)).same(Item("dir", ident=(1, 3)))
    assert not Item("dir", ident=(1, 2)).same(Item("dir"))
    assert not Item("dir").same(Item("dir", ident=(1, 2)))


def test_digest_of_hashes_a_regular_files_first_bytes_only(work: Path) -> None:
    path = work / "log.jsonl"
    data = os.urandom(3 << 20)
    path.write_bytes(data)
    for limit in (0, 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20, 4 << 20):
        assert digest_of(path, limit) == hashlib.sha256(data[:limit]).hexdigest(), limit
    os.mkfifo(work / "pipe")
    (work / "link").symlink_to(path)
    for other in (work / "pipe", work / "link", work / "missing", work):
        assert digest_of(other, 10) is None, other


# --- putting back ----------------------------------------------------------------------------


def test_put_back_replaces_whatever_is_there_by_each_kind(work: Path) -> None:
    target = work / "t"
    for now in ("file", "dir", "link"):
        for before in (
            Item("file", 0o751, b"data", "d"),
            Item("symlink", data=b"somewhere"),
            Item("dir", 0o711),
        ):
            if now == "file":
                target.write_text("now", encoding="utf-8")
            elif now == "dir":
                (target / "inside").mkdir(parents=True)
            else:
                target.symlink_to(work / ".git")
            assert put_back(target, before) == "", (now, before)
            assert item_of(target).kind == before.kind
            if before.kind == "file":
                assert target.read_bytes() == b"data" and target.stat().st_mode & 0o7777 == 0o751
            elif before.kind == "symlink":
                assert os.readlink(target) == "somewhere"
            else:
                assert target.stat().st_mode & 0o777 == 0o711 and not list(target.iterdir())
            put_back(target, Item("absent"))
        assert (work / ".git" / "config").is_file()  # a link is removed, never followed


def test_what_was_not_kept_or_has_no_folder_is_named_not_put_back(work: Path) -> None:
    big = Item("file", 0o644, None, "large:x")
    assert put_back(work / "big", big) == (
        "a file that was not kept (over 1048576 bytes or unreadable)"
    )
    assert put_back(work / "s", Item("symlink")).startswith("a symlink that was not kept")
    assert put_back(work / "o", Item("other", 0o644)).startswith("a other that was not kept")
    assert not os.path.lexists(work / "big")
    assert put_back(work / "gone" / "f", Item("file", 0o644, b"x", "d")) == (
        "its folder is gone or not a folder"
    )
    (work / "file").write_text("", encoding="utf-8")
    assert put_back(work / "file" / "f", Item("dir", 0o755)).startswith("its folder is gone")
    (work / "dirlink").symlink_to(work / ".git")
    assert put_back(work / "dirlink" / "x", Item("file", 0o644, b"x", "d")).startswith("its")
    assert not (work / ".git" / "x").exists()
    assert put_back(work / "m", Item("dir")) == "" and (work / "m").is_dir()


# --- restore: the entry, the trees, the labels -----------------------------------------------


def test_a_git_entry_made_where_there_was_none_is_removed(tmp_path: Path, work: Path) -> None:
    sub = work / "sub"
    sub.mkdir()
    places = GitPlaces(sub / ".git", work / ".git", work / ".git")
    for plant in ("file", "dir", "link"):
        before = record(places, (sub,))
        assert before.items == {str(sub / ".git"): Item("absent")}
        if plant == "file":
            (sub / ".git").write_text("gitdir: /tmp/x\n", encoding="utf-8")
        elif plant == "dir":
            _git_folder(sub / ".git")
        else:
            (sub / ".git").symlink_to(work / ".git")
        changes, failed = before.restore()
        kind = {"file": "file", "dir": "dir", "link": "symlink"}[plant]
        assert changes == [f".git added ({kind})"] and failed == []
        assert not os.path.lexists(sub / ".git")
    assert (work / ".git" / "config").is_file()


def test_a_git_folder_removed_comes_back_with_its_recorded_files(work: Path) -> None:
    dot = work / ".git"
    before = record(_places(work))
    config = (dot / "config").read_bytes()
    shutil.rmtree(dot)
    changes, failed = before.restore()
    assert changes[0] == ".git removed"
    assert ".git/config removed" in changes and ".git/hooks/pre-commit.sample removed" in changes
    assert failed == []
    assert (dot / "config").read_bytes() == config
    assert (dot / "hooks" / "pre-commit.sample").is_file()
    assert (dot / "info" / "exclude").is_file()


def test_a_git_folder_swapped_for_another_folder_is_put_back(work: Path) -> None:
    dot = work / ".git"
    before = record(_places(work))
    dot.rename(work / "aside")
    _git_folder(dot)
    (dot / "hooks" / "pre-commit").write_text("evil", encoding="utf-8")
    changes, failed = before.restore()
    assert changes == [".git replaced by another folder"] and failed == []
    assert not (dot / "hooks" / "pre-commit").exists()
    assert not (work / "aside").exists()


def test_a_git_folder_moved_aside_and_replaced_by_a_link_comes_back(work: Path) -> None:
    dot = work / ".git"
    (dot / "hooks" / "only-here").write_text("x", encoding="utf-8")
    before = record(_places(work))
    dot.rename(work / "aside")
    dot.symlink_to(work / "aside")
    changes, failed = before.restore()
    assert changes == [".git replaced (a dir, now a symlink)"] and failed == []
    assert dot.is_dir() and not dot.is_symlink() and (dot / "hooks" / "only-here").is_file()


def test_a_git_file_changed_is_put_back_and_a_failure_to_is_named(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {store}\n", encoding="utf-8")
    before = record(_places(top), (top,))
    assert set(before.items) == {str(top / ".git")}
    (top / ".git").write_text("gitdir: /tmp/evil\n", encoding="utf-8")
    assert before.restore() == ([".git changed"], [])
    assert (top / ".git").read_text(encoding="utf-8") == f"gitdir: {store}\n"
    big = GitPlaces(top / ".git", store, store)
    (top / ".git").write_bytes(b"gitdir: " + b" " * (2 << 20))
    large = record(big, (top,))
    (top / ".git").write_text("gitdir: /tmp/evil\n", encoding="utf-8")
    changes, failed = large.restore()
    assert changes == [".git changed"]
    assert failed == [
        f"{top / '.git'}: a file that was not kept (over 1048576 bytes or unreadable)"
    ]


def test_a_tree_swapped_for_a_file_comes_back_whole(work: Path) -> None:
    dot = work / ".git"
    (dot / "hooks" / "sub").mkdir()
    (dot / "hooks" / "sub" / "x").write_text("x", encoding="utf-8")
    before = record(_places(work))
    shutil.rmtree(dot / "hooks")
    (dot / "hooks").write_text("a file", encoding="utf-8")
    (dot / "info" / "new").mkdir()
    (dot / "info" / "new" / "deep").mkdir()
    (dot / "info" / "new" / "deep" / "f").write_text("", encoding="utf-8")
    changes, failed = before.restore()
    assert failed == []
    assert ".git/hooks replaced (a dir, now a file)" in changes
    assert ".git/hooks/sub/x removed" in changes
    assert ".git/info/new added (dir)" in changes and ".git/info/new/deep/f added (file)" in changes
    assert (dot / "hooks" / "sub" / "x").read_text(encoding="utf-8") == "x"
    assert (dot / "hooks" / "pre-commit.sample").is_file()
    assert not (dot / "info" / "new").exists()


def test_a_common_folder_outside_the_work_tree_is_named_by_its_path(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store").resolve()
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {store}\n", encoding="utf-8")
    before = record(_places(top))
    (store / "hooks" / "post-checkout").write_text("evil", encoding="utf-8")
    assert before.restore() == ([f"{store}/hooks/post-checkout added (file)"], [])


def test_restoring_does_not_follow_a_link_planted_in_place_of_a_tree(
    work: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("keep", encoding="utf-8")
    before = record(_places(work))
    (victim / "exclude").write_text("victim's", encoding="utf-8")
    shutil.rmtree(work / ".git" / "info")
    (work / ".git" / "info").symlink_to(victim)
    changes, failed = before.restore()
    assert ".git/info replaced (a dir, now a symlink)" in changes and failed == []
    assert (victim / "keep").read_text(encoding="utf-8") == "keep"
    assert (victim / "exclude").read_text(encoding="utf-8") == "victim's"
    assert (work / ".git" / "info" / "exclude").is_file()


def test_a_relative_workdir_is_found_from_where_the_runner_stands(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "sub").mkdir()
    monkeypatch.chdir(work / "sub")
    assert _places(Path(".")).entry == work / ".git"


@pytest.mark.parametrize("where", [".git", "commondir"])
def test_bytes_that_are_not_utf8_in_a_git_file_or_commondir_crash_nothing(
    tmp_path: Path, where: str
) -> None:
    store = _git_folder(tmp_path / "store")
    (tmp_path / "w").mkdir()
    if where == ".git":
        (tmp_path / "w" / ".git").write_bytes(b"gitdir: \xff\xfe\n")
        assert git_places(tmp_path / "w") is None
    else:
        (tmp_path / "w" / ".git").write_text(f"gitdir: {store}\n", encoding="utf-8")
        (store / "commondir").write_bytes(b"\xff\xfe\n")
        assert _places(tmp_path / "w").common_dir == store.resolve()


def test_a_link_under_modules_or_worktrees_is_not_followed(work: Path, tmp_path: Path) -> None:
    outside = _git_folder(tmp_path / "outside")
    for name in ("modules", "worktrees"):
        (work / ".git" / name).mkdir(exist_ok=True)
        (work / ".git" / name / "evil").symlink_to(outside)
    before = record(_places(work))
    assert not [k for k in before.items if "/evil/" in k]
    (outside / "hooks" / "post-checkout").write_text("evil", encoding="utf-8")
    assert before.restore() == ([], [])
    assert (outside / "hooks" / "post-checkout").exists()


def test_git_folders_nested_in_git_folders_are_recorded_to_depth_eight(work: Path) -> None:
    folder = work / ".git"
    chain = []
    for n in range(10):
        folder = _git_folder(folder / "modules" / f"m{n}")
        chain.append(folder)
    taken = record(_places(work)).items
    assert str(chain[7] / "config") in taken  # nested eight times
    assert str(chain[8] / "config") not in taken


def test_a_tree_replaced_by_a_fresh_folder_with_the_same_files_is_no_change(work: Path) -> None:
    info = work / ".git" / "info"
    before = record(_places(work))
    data = (info / "exclude").read_bytes()
    shutil.rmtree(info)
    info.mkdir()
    (info / "exclude").write_bytes(data)
    assert before.restore() == ([], [])
    assert Item("dir", 0o755).same(item_of(info))  # only the entry's folder has an identity


def test_a_record_confined_to_one_folder_restores_only_there(tmp_path: Path) -> None:
    store = _git_folder(tmp_path / "store")
    linked = _git_folder(store / "worktrees" / "x")
    (linked / "commondir").write_text("../..\n", encoding="utf-8")
    top = (tmp_path / "w").resolve()
    top.mkdir()
    (top / ".git").write_text(f"gitdir: {linked}\n", encoding="utf-8")
    before = record(_places(top), (linked.resolve(),))
    (top / ".git").write_text("gitdir: /tmp/evil\n", encoding="utf-8")
    (store / "hooks" / "a").write_text("", encoding="utf-8")
    (linked / "hooks" / "b").write_text("", encoding="utf-8")
    changes, failed = before.restore()
    assert changes == [f"{linked.resolve()}/hooks/b added (file)"] and failed == []
    assert (top / ".git").read_text(encoding="utf-8") == "gitdir: /tmp/evil\n"
    assert (store / "hooks" / "a").exists() and not (linked / "hooks" / "b").exists()


def test_a_git_folder_moved_aside_is_found_among_other_folders_never_through_a_link(
    work: Path,
) -> None:
    for name in ("aaa", "mmm", "zzz", "bbb", "yyy"):
        (work / name).mkdir()
    (work / ".git" / "hooks" / "only-here").write_text("x", encoding="utf-8")
    before = record(_places(work))
    (work / ".git").rename(work / "mmm" / "aside")
    (work / "link").symlink_to(work / "mmm" / "aside")
    changes, failed = before.restore()
    assert changes[0] == ".git removed" and failed == []
    assert (work / ".git").is_dir() and not (work / ".git").is_symlink()
    assert (work / "link").is_symlink()
    for name in ("aaa", "mmm", "zzz", "bbb", "yyy"):
        assert (work / name).is_dir(), name
    (work / ".git").rename(work / "gone")
    shutil.rmtree(work / "gone")
    _git_folder(work / ".git")
    before = record(_places(work))
    (work / ".git").rename(work / "yyy" / "x")
    (work / ".git").mkdir()
    (work / "yyy" / "x").rename(work / "moved")
    assert before.restore()[1] == []
    assert (work / ".git" / "config").is_file() and not (work / "moved").exists()


def test_no_read_leaves_a_descriptor_open(work: Path) -> None:
    os.mkfifo(work / "pipe")
    (work / "file").write_bytes(b"x" * 100)
    opened = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        digest_of(work / "file", 10)
        digest_of(work / "pipe", 10)
        item_of(work / "file")
        item_of(work / "pipe")
        git_places(work)
    assert len(os.listdir("/proc/self/fd")) == opened


def test_a_put_back_the_system_refuses_says_why(work: Path) -> None:
    problem = put_back(work / ("x" * 300), Item("file", 0o644, b"x", "d"))
    assert "File name too long" in problem
    assert put_back(work / "m", Item("dir")) == ""
    assert (work / "m").stat().st_mode & 0o777 == 0o755
