"""What the agent leaves behind (runner.run.guard.leftovers, DESIGN 24), in process: `prepare`
decides per backend what is bound, pinned or recorded; `trial` believes a read-only bind only
when a write through it failed; `finish` names every change, restores it and says what it could
not. Real repositories in tmp folders, real git, real files, the trial as a real subprocess.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from pathlib import Path

import pytest

from runner.outcome import SandboxRecord
from runner.run.guard.leftovers import Leftovers, prepare
from runner.workspace import git_places
from tests.conftest import git

_REASON = "the task changed what it may not leave behind (DESIGN 24): "


@pytest.fixture
def tmp_path(memory_tmp_path: Path) -> Path:
    """On the memory file system: these tests make and walk thousands of entries."""
    return memory_tmp_path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "w"
    work.mkdir()
    git(work, "init", "-q")  # no commit: the guard reads the git folder by hand
    return work.resolve()


def _out(tmp_path: Path) -> Path:
    out = (tmp_path / "OUT").resolve()
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / "t.yaml").write_text("task: t\n", encoding="utf-8")
    (out / "report.xml").write_text("<testsuites/>\n", encoding="utf-8")
    return out


def _plant_hook(repo: Path) -> Path:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho ran\n", encoding="utf-8")
    hook.chmod(0o755)
    return hook


# --- prepare: what each backend holds --------------------------------------------------------


@pytest.mark.parametrize("writable_git", [False, True])
def test_unconfined_everything_is_recorded_and_checked(
    repo: Path, tmp_path: Path, writable_git: bool
) -> None:
    out = _out(tmp_path)
    left = prepare(repo, (), "", writable_git=writable_git, out_dir=out)
    assert left.git == ("writable" if writable_git else "checked")
    assert left.out == "checked"
    assert left.git_record is not None and left.git_record.within is None
    assert left.links == {}  # the index may change: its gitlinks are recorded (none here)
    assert left.locked == (out,) and left.pinned == ()
    assert set(left.out_record) == {str(out / "tasks" / "t.yaml"), str(out / "report.xml")}
    _plant_hook(repo)
    (out / "report.xml").write_text("forged\n", encoding="utf-8")
    reason = left.finish()
    assert reason.startswith(_REASON) and reason.endswith(". Restored")
    assert ".git/hooks/pre-commit added (file)" in reason
    assert "OUT/report.xml changed" in reason
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (out / "report.xml").read_text(encoding="utf-8") == "<testsuites/>\n"
    assert left.finish() == ""


def test_under_bwrap_the_git_folder_is_bound_read_only_and_out_too(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    left = prepare(repo, (repo, out), "bwrap", writable_git=False, out_dir=out)
    assert left.git == "read-only" and left.out == "read-only"
    assert left.locked == (repo / ".git", out) and left.pinned == ()
    assert left.links is None  # the index cannot change: no gitlink is compared
    assert left.out_record == {}  # bound read-only: nothing to compare
    assert left.places is not None and left.places.entry == repo / ".git"
    assert left.git_record is not None and left.git_record.within == (repo, out)


def test_under_bwrap_a_writable_git_folder_pins_it_and_locks_what_git_runs(
    repo: Path, tmp_path: Path
) -> None:
    left = prepare(repo, (repo,), "bwrap", writable_git=True, out_dir=None)
    assert left.git == "writable" and left.out == "" and left.out_dir is None
    assert left.pinned == (repo / ".git",)
    assert {p.relative_to(repo / ".git").as_posix() for p in left.locked} == {
        "config",
        "hooks",
        "info",
    }
    assert left.links == {}


@pytest.mark.parametrize("writable_git", [False, True])
def test_under_landlock_nothing_is_bound_and_everything_is_recorded(
    repo: Path, tmp_path: Path, writable_git: bool
) -> None:
    out = _out(tmp_path)
    left = prepare(repo, (repo, out), "landlock", writable_git=writable_git, out_dir=out)
    assert left.git == ("writable" if writable_git else "checked")
    assert left.out == "checked" and left.out_record
    assert left.locked == (out,) and left.pinned == ()  # `out`: the file tools refuse it
    assert left.links == {}


def test_a_git_folder_the_commands_cannot_reach_is_not_bound(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for backend in ("bwrap", "landlock"):
        left = prepare(elsewhere, (elsewhere,), backend, writable_git=False, out_dir=None)
        assert left.places is None and left.git_record is None and left.git == ""
        assert left.locked == () and left.pinned == ()


def test_a_git_folder_reachable_only_through_a_writable_folder_is_held(
    repo: Path, tmp_path: Path
) -> None:
    # The work tree is outside what commands may write, its git folder inside.
    store = (tmp_path / "store").resolve()
    git(repo, "init", "-q", f"--separate-git-dir={store}")
    left = prepare(repo, (store,), "bwrap", writable_git=False, out_dir=None)
    assert left.git == "read-only" and left.places is not None
    assert left.locked == (store,)  # the `.git` file itself lies outside `rw`
    assert left.git_record is not None
    assert str(repo / ".git") not in left.git_record.items  # nor is it recorded


def test_a_repository_above_the_workdir_checks_only_a_git_planted_in_the_workdir(
    repo: Path,
) -> None:
    sub = repo / "sub"
    sub.mkdir()
    left = prepare(sub, (sub,), "bwrap", writable_git=False, out_dir=None)
    assert left.git == "read-only" and left.places is None and left.locked == ()
    assert left.git_record is not None
    assert left.git_record.places.entry == sub / ".git"
    planted = sub / ".git"
    planted.write_text("gitdir: /tmp/evil\n", encoding="utf-8")
    _plant_hook(repo)  # outside what commands could write: never restored
    reason = left.finish()
    assert reason == _REASON + ".git added (file). Restored"
    assert not os.path.lexists(planted)
    assert (repo / ".git" / "hooks" / "pre-commit").exists()


def test_a_workdir_in_no_repository_holds_only_out(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    out = tmp_path / "new" / "OUT"  # made before any command could make it its own
    left = prepare(work, (work, out), "bwrap", writable_git=False, out_dir=out)
    assert left.git == "" and left.git_record is None and left.places is None
    assert out.is_dir() and left.out_dir == out.resolve() and left.locked == (out.resolve(),)


def test_an_out_folder_commands_cannot_write_is_neither_bound_nor_recorded(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    for backend in ("bwrap", "landlock"):
        left = prepare(repo, (repo,), backend, writable_git=False, out_dir=out)
        assert left.out == "" and left.out_dir is None and left.out_record == {}
        assert out not in left.locked


def test_the_stamp_carries_how_git_and_out_held(repo: Path) -> None:
    left = Leftovers(git="checked", out="read-only")
    stamped = left.stamp(SandboxRecord("enforced", backend="bwrap"))
    assert (stamped.git, stamped.out, stamped.backend) == ("checked", "read-only", "bwrap")


# --- trial: a bind is read-only only when a write through it failed --------------------------


def test_the_trial_runs_only_under_bwrap_with_something_bound(repo: Path, tmp_path: Path) -> None:
    out = _out(tmp_path)
    for left in (
        prepare(repo, (repo, out), "landlock", writable_git=False, out_dir=out),
        prepare(repo, (repo, out), "", writable_git=False, out_dir=out),
        Leftovers(backend="bwrap", git="read-only"),  # nothing bound
        Leftovers(backend="bwrap", git="writable", places=git_places(repo)),  # nor pinned
    ):
        before = left.git
        asyncio.run(left.trial(repo))
        assert left.problems == [] and left.git == before


def test_every_bound_path_that_takes_a_write_is_named_and_checked(
    repo: Path, tmp_path: Path
) -> None:
    # No sandbox is current here: every write goes through, as under a bind that did not hold.
    out = _out(tmp_path)
    left = prepare(repo, (repo, out), "bwrap", writable_git=False, out_dir=out)
    asyncio.run(left.trial(repo))
    # The folder takes a new file, then the entry takes a rename: named once for each.
    assert left.problems == [
        f"{repo / '.git'} was writable",
        f"{out} was writable",
        f"{repo / '.git'} was writable",
    ]
    assert left.git == "checked" and left.out == "checked"
    assert (repo / ".git").is_dir() and not list(repo.glob(".git.agent-runner-trial"))
    assert not list(out.glob(".agent-runner-trial"))


def test_only_what_took_the_write_is_marked_checked(repo: Path, tmp_path: Path) -> None:
    out = _out(tmp_path)
    left = prepare(repo, (repo, out), "bwrap", writable_git=False, out_dir=out)
    shutil.rmtree(out)  # nothing there to take a write: --out held
    asyncio.run(left.trial(repo))
    assert left.git == "checked" and left.out == "read-only"
    assert left.problems == [f"{repo / '.git'} was writable"] * 2


def test_a_git_folder_bound_read_only_never_compares_gitlinks(repo: Path) -> None:
    _gitlink(repo, "sub")
    left = prepare(repo, (repo,), "bwrap", writable_git=False, out_dir=None)
    assert left.links is None and left.finish() == ""


def test_a_writable_git_folder_stays_writable_when_its_locks_do_not_hold(repo: Path) -> None:
    left = prepare(repo, (repo,), "bwrap", writable_git=True, out_dir=None)
    asyncio.run(left.trial(repo))
    named = {p.removesuffix(" was writable") for p in left.problems}
    # config (a file opened to append), hooks and info (a file made in them), the pinned entry
    assert named == {str(p) for p in left.locked} | {str(repo / ".git")}
    assert left.git == "writable"
    assert (repo / ".git" / "config").read_bytes().startswith(b"[core]")


def test_a_pinned_entry_alone_is_tried(repo: Path) -> None:
    places = git_places(repo)
    left = Leftovers(git="writable", backend="bwrap", pinned=(repo / ".git",), places=places)
    asyncio.run(left.trial(repo))
    assert left.problems == [f"{repo / '.git'} was writable"] and left.git == "writable"


def test_the_entry_is_tried_only_when_git_is_held(repo: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    for git_mode in ("checked", ""):
        left = Leftovers(git=git_mode, backend="bwrap", locked=(gone,), places=git_places(repo))
        asyncio.run(left.trial(repo))
        assert left.problems == [], git_mode


def test_a_bound_path_that_refuses_the_write_is_read_only(repo: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    left = Leftovers(git="read-only", backend="bwrap", locked=(gone, gone / "f"))
    asyncio.run(left.trial(repo))  # no entry is tried without places
    assert left.problems == [] and left.git == "read-only"


def test_a_trial_that_does_not_run_claims_nothing_held(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _out(tmp_path)
    for output in ("echo 'not json'", "echo '{}'", "echo 'oops' >&2; exit 3", "true"):
        fake = tmp_path / "python"
        fake.write_text(f"#!/bin/sh\n{output}\n", encoding="utf-8")
        fake.chmod(0o755)
        monkeypatch.setattr("sys.executable", str(fake))
        left = prepare(repo, (repo, out), "bwrap", writable_git=False, out_dir=out)
        asyncio.run(left.trial(repo))
        assert left.problems[0].startswith("the trial did not run ("), output
        assert left.git == "checked" and left.out == "checked", output
        assert set(left.problems[1:]) == {
            f"{repo / '.git'} was writable",
            f"{out} was writable",
        }, output
        if "oops" in output:
            assert left.problems[0] == "the trial did not run (oops)"
        if output == "true":  # no line at all: the error itself is named
            assert left.problems[0] == "the trial did not run (list index out of range)"


def test_a_trial_that_cannot_start_claims_nothing_held(repo: Path, tmp_path: Path) -> None:
    bound = tmp_path / "bound"
    bound.mkdir()
    left = Leftovers(git="read-only", backend="bwrap", locked=(bound,))
    asyncio.run(left.trial(tmp_path / "no-such-workdir"))  # no entry: none is claimed
    assert left.problems[0].startswith("the trial did not run (")
    assert left.problems[1:] == [f"{bound} was writable"] and left.git == "checked"


def test_nothing_recorded_is_nothing_compared() -> None:
    assert Leftovers(links={}).finish() == ""


def test_a_trial_that_does_not_run_names_the_end_of_its_error(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nprintf 'x%.0s' $(seq 300) >&2; echo END >&2\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(fake))
    left = prepare(repo, (repo,), "bwrap", writable_git=False, out_dir=None)
    asyncio.run(left.trial(repo))
    assert left.problems[0] == f"the trial did not run ({'x' * 197}END)"


# --- finish: every change named, restored, and what could not be ------------------------------


def test_more_than_twenty_changes_name_twenty_and_count_the_rest(repo: Path) -> None:
    left = prepare(repo, (), "", writable_git=False, out_dir=None)
    hooks = repo / ".git" / "hooks"
    for n in range(23):
        (hooks / f"h{n:02}").write_text("evil\n", encoding="utf-8")
    reason = left.finish()
    assert reason.count(" added (file)") == 20 and "h19 added" in reason
    assert reason.endswith(".git/hooks/h19 added (file); and 3 more. Restored")
    assert not list(hooks.glob("h*"))


@pytest.mark.parametrize(
    ("count", "tail"), [(20, "h19 added (file). Restored"), (21, "; and 1 more. Restored")]
)
def test_twenty_changes_are_all_named(repo: Path, count: int, tail: str) -> None:
    left = prepare(repo, (), "", writable_git=False, out_dir=None)
    for n in range(count):
        (repo / ".git" / "hooks" / f"h{n:02}").write_text("evil\n", encoding="utf-8")
    assert left.finish().endswith(tail)


def test_what_cannot_be_put_back_is_named_at_most_ten_times(repo: Path, tmp_path: Path) -> None:
    hooks = repo / ".git" / "hooks"
    for n in range(12):
        (hooks / f"big{n:02}").write_bytes(b"x" * ((1 << 20) + 1))
    left = prepare(repo, (), "", writable_git=False, out_dir=None)
    for n in range(12):
        (hooks / f"big{n:02}").write_bytes(b"y" * ((1 << 20) + 1))
    reason = left.finish()
    assert ". Restored, but not: " in reason
    assert reason.count("not kept") == 10
    assert "big09" in reason.split("but not:")[1] and "big10" not in reason.split("but not:")[1]


def test_changes_to_git_submodules_and_out_are_all_named_together(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    big = repo / ".git" / "hooks" / "big"
    big.write_bytes(b"x" * ((1 << 20) + 1))
    left = prepare(repo, (repo, out), "landlock", writable_git=True, out_dir=out)
    big.write_bytes(b"y" * ((1 << 20) + 1))  # not kept: what cannot be put back is named too
    _plant_hook(repo)
    _gitlink(repo, "sub")
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: /tmp/evil\n", encoding="utf-8")
    (out / "report.xml").write_text("forged\n", encoding="utf-8")
    (out / "big").write_bytes(b"x")
    reason = left.finish()
    assert ".git/hooks/pre-commit added (file)" in reason
    assert f"{repo}/sub/.git added (a submodule's)" in reason
    assert "OUT/report.xml changed" in reason
    assert reason.split(", but not: ")[1].startswith(".git/hooks/big: a file that was not kept")


def _gitlink(repo: Path, path: str) -> None:
    # A gitlink names a commit of another repository: git does not look for it here.
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{'a' * 40},{path}")


def test_a_submodule_git_file_that_appears_or_changes_is_put_back(
    repo: Path, tmp_path: Path
) -> None:
    _gitlink(repo, "kept")
    (repo / "kept").mkdir()
    (repo / "kept" / ".git").write_text("gitdir: ../.git\n", encoding="utf-8")
    left = prepare(repo, (repo,), "landlock", writable_git=True, out_dir=None)
    assert left.links is not None and set(left.links) == {str(repo / "kept" / ".git")}
    evil = tmp_path / "evil"
    git(tmp_path, "init", "-q", str(evil))
    _gitlink(repo, "added")
    (repo / "added").mkdir()
    (repo / "added" / ".git").write_text(f"gitdir: {evil}/.git\n", encoding="utf-8")
    _gitlink(repo, "folder")
    (repo / "folder" / ".git").mkdir(parents=True)
    _gitlink(repo, "linked")
    (repo / "linked").mkdir()
    (repo / "linked" / ".git").symlink_to(evil / ".git")
    (repo / "kept" / ".git").write_text(f"gitdir: {evil}/.git\n", encoding="utf-8")
    reason = left.finish()
    assert f"{repo}/added/.git added (a submodule's)" in reason
    assert f"{repo}/folder/.git added (a submodule's)" in reason
    assert f"{repo}/kept/.git changed (a submodule's)" in reason
    assert not os.path.lexists(repo / "added" / ".git")
    assert not os.path.lexists(repo / "folder" / ".git")
    assert not os.path.lexists(repo / "linked" / ".git") and (evil / ".git" / "config").is_file()
    assert "but not" not in reason
    assert (repo / "kept" / ".git").read_text(encoding="utf-8") == "gitdir: ../.git\n"


def test_a_gitlink_naming_the_work_tree_itself_never_removes_the_repository(
    repo: Path,
) -> None:
    left = prepare(repo, (repo,), "landlock", writable_git=True, out_dir=None)
    for name in (".", "./", ""):
        # Written by hand into the index: git reads such an entry, though it would never add one.
        sha = bytes.fromhex("a" * 40)
        body = b"DIRC" + (2).to_bytes(4, "big") + (1).to_bytes(4, "big")
        entry = (0).to_bytes(24, "big") + (0o160000).to_bytes(4, "big") + bytes(12) + sha
        entry += len(name).to_bytes(2, "big") + name.encode()
        entry += b"\0" * (8 - len(entry) % 8)
        body += entry
        (repo / ".git" / "index").write_bytes(body + hashlib.sha1(body).digest())
        assert git(repo, "ls-files", "--stage").startswith("160000 "), name
        left.finish()
        assert (repo / ".git" / "config").is_file(), name
        assert (repo / ".git" / "objects").is_dir(), name


# --- the files of --out ----------------------------------------------------------------------


def _checked_out(repo: Path, out: Path) -> Leftovers:
    left = prepare(repo, (repo, out), "landlock", writable_git=False, out_dir=out)
    assert left.out == "checked"
    return left


def test_every_file_of_out_that_changes_or_goes_is_put_back(repo: Path, tmp_path: Path) -> None:
    out = _out(tmp_path)
    (out / "link").symlink_to("report.xml")
    (out / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    (out / "run.sh").chmod(0o754)
    left = _checked_out(repo, out)
    (out / "tasks" / "t.yaml").unlink()
    (out / "report.xml").write_text("<forged/>\n", encoding="utf-8")
    (out / "link").unlink()
    (out / "link").symlink_to("/etc/passwd")
    (out / "run.sh").chmod(0o755)  # only the others' executable bit
    reason = left.finish()
    for said in (
        "OUT/tasks/t.yaml removed",
        "OUT/report.xml changed",
        "OUT/link changed",
        "OUT/run.sh changed",
    ):
        assert said in reason
    assert (out / "tasks" / "t.yaml").read_text(encoding="utf-8") == "task: t\n"
    assert (out / "report.xml").read_text(encoding="utf-8") == "<testsuites/>\n"
    assert os.readlink(out / "link") == "report.xml"
    assert (out / "run.sh").stat().st_mode & 0o777 == 0o754
    assert left.finish() == ""


def test_a_file_of_out_rewritten_with_its_size_and_time_kept_is_a_change(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    mib = 1 << 20
    (out / "big.bin").write_bytes(b"x" * (mib + 1))
    left = _checked_out(repo, out)
    for name, forged in (("report.xml", b"<TESTSUITES/>\n"), ("big.bin", b"y" * (mib + 1))):
        path = out / name
        was = path.stat()
        path.write_bytes(forged)
        assert path.stat().st_size == was.st_size
        os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))  # the time put back by hand
    (out / "run.sh").write_text("#!/bin/sh\n", encoding="utf-8")
    reason = left.finish()
    assert "OUT/report.xml changed" in reason and "OUT/big.bin changed" in reason
    assert (out / "report.xml").read_text(encoding="utf-8") == "<testsuites/>\n"


def test_a_submodule_whose_folder_is_gone_is_named_as_not_put_back(repo: Path) -> None:
    _gitlink(repo, "kept")
    (repo / "kept").mkdir()
    (repo / "kept" / ".git").write_text("gitdir: ../.git\n", encoding="utf-8")
    left = prepare(repo, (repo,), "landlock", writable_git=True, out_dir=None)
    (repo / "kept" / ".git").unlink()
    (repo / "kept").rmdir()
    (repo / "kept").write_text("a file now", encoding="utf-8")
    reason = left.finish()
    assert f"{repo}/kept/.git changed (a submodule's)" in reason
    assert f"but not: {repo}/kept/.git: its folder is gone or not a folder" in reason


def test_a_file_only_touched_is_no_change_but_a_log_may_only_grow(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    log = out / "s.jsonl"
    log.write_text('{"a": 1}\n', encoding="utf-8")
    big_log = out / "big.jsonl"
    big_log.write_bytes(b"{}\n" * ((1 << 20) // 3 + 1))  # over 1 MiB: hashed, not kept
    big = out / "big.bin"
    big.write_bytes(b"x" * ((1 << 20) + 1))
    other = out / "notes.txt"
    other.write_text("abc\n", encoding="utf-8")
    left = _checked_out(repo, out)
    os.utime(out / "report.xml", ns=(1, 1))  # same bytes, new time
    for grown in (log, big_log):
        with grown.open("a", encoding="utf-8") as more:
            more.write('{"b": 2}\n')
    assert left.finish() == ""
    with other.open("a", encoding="utf-8") as more:  # grown, but not a log
        more.write("def\n")
    assert left.finish().endswith("OUT/notes.txt changed. Restored")
    log.write_text('{"c": 3}\n{"d": 4}\n', encoding="utf-8")  # rewritten, then grown
    assert "OUT/s.jsonl changed" in left.finish()
    assert log.read_text(encoding="utf-8") == '{"a": 1}\n'
    log.write_text("", encoding="utf-8")  # shrunk
    assert "OUT/s.jsonl changed" in left.finish()


def test_a_log_over_a_gib_is_not_hashed_so_its_growth_is_a_change(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    huge, gib = out / "huge.jsonl", out / "gib.jsonl"
    with huge.open("wb") as sparse:
        sparse.truncate((1 << 30) + 1)  # holes: no GiB is written
    with gib.open("wb") as sparse:
        sparse.truncate(1 << 30)  # a GiB exactly is still hashed: it may grow
    left = _checked_out(repo, out)
    assert left.out_record[str(huge)].digest is None
    assert left.out_record[str(gib)].digest is not None
    with huge.open("ab") as more:
        more.write(b"{}\n")
    assert f"but not: {huge}: not kept" in left.finish()


def test_a_large_file_of_out_is_fingerprinted_and_named_when_it_cannot_come_back(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    big = out / "big.bin"
    big.write_bytes(b"x" * ((1 << 20) + 1))
    exact = out / "exact.bin"
    exact.write_bytes(b"x" * (1 << 20))  # 1 MiB exactly is still kept
    left = _checked_out(repo, out)
    big.write_bytes(b"y" * ((1 << 20) + 1))
    exact.write_bytes(b"y" * (1 << 20))
    reason = left.finish()
    assert f"but not: {big}: not kept (over {1 << 20} bytes)" in reason
    assert "exact.bin" not in reason.split("but not:")[1]
    assert exact.read_bytes() == b"x" * (1 << 20)
    os.utime(big, ns=(5, 5))
    big.write_bytes(b"x" * ((1 << 20) + 1))  # its bytes back, its time not: a change still
    assert "OUT/big.bin changed" in left.finish()


def test_out_keeps_sixteen_mib_of_files_but_every_task_file(repo: Path, tmp_path: Path) -> None:
    out = _out(tmp_path)
    mib = 1 << 20
    for n in range(17):
        (out / f"f{n:02}").write_bytes(bytes([65 + n]) * mib)
    (out / "tasks" / "zz.yaml").write_bytes(b"t" * mib)
    left = _checked_out(repo, out)
    kept = {Path(k).name for k, v in left.out_record.items() if v.item.data is not None}
    assert {f"f{n:02}" for n in range(16)} <= kept and "f16" not in kept
    assert {"t.yaml", "zz.yaml"} <= kept
    for name in ("f15", "f16", "zz.yaml"):
        target = out / name if name != "zz.yaml" else out / "tasks" / name
        target.write_bytes(b"?" * mib)
    reason = left.finish()
    assert f"{out}/f16: not kept" in reason and "f15: not" not in reason
    assert (out / "tasks" / "zz.yaml").read_bytes() == b"t" * mib
    assert (out / "f15").read_bytes() == bytes([65 + 15]) * mib


def test_the_servers_logs_and_new_files_of_out_are_not_compared(repo: Path, tmp_path: Path) -> None:
    out = _out(tmp_path)
    (out / "mcp-logs").mkdir()
    (out / "mcp-logs" / "s.log").write_text("a\n", encoding="utf-8")
    (out / "deep" / "mcp-logs").mkdir(parents=True)
    (out / "deep" / "mcp-logs" / "x").write_text("a\n", encoding="utf-8")
    left = _checked_out(repo, out)
    assert str(out / "mcp-logs" / "s.log") not in left.out_record
    assert str(out / "deep" / "mcp-logs" / "x") in left.out_record  # only the top one is skipped
    assert str(out / "report.xml") in left.out_record  # named after it: still recorded
    (out / "mcp-logs" / "s.log").write_text("rewritten\n", encoding="utf-8")
    (out / "new.txt").write_text("new\n", encoding="utf-8")
    assert left.finish() == ""


def test_a_fifo_in_out_is_recorded_without_blocking_and_compared_by_kind(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    os.mkfifo(out / "pipe")
    left = _checked_out(repo, out)
    record = left.out_record[str(out / "pipe")]
    assert record.item.kind == "other" and record.digest is None
    assert left.finish() == ""
    (out / "pipe").unlink()
    (out / "pipe").write_text("file\n", encoding="utf-8")
    reason = left.finish()
    assert "OUT/pipe changed" in reason
    assert f"but not: {out}/pipe: a other that was not kept" in reason


def test_out_records_at_most_five_thousand_files(repo: Path, tmp_path: Path) -> None:
    out = (tmp_path / "OUT").resolve()
    (out / "b").mkdir(parents=True)
    (out / "b" / "x").touch()
    many = out / "c"
    many.mkdir()
    for n in range(5003):
        os.symlink("x", many / f"{n:05}")  # links: recorded without being opened
    left = _checked_out(repo, out)
    assert len([k for k in left.out_record if Path(k).parent == many]) == 5000
    assert str(out / "b" / "x") not in left.out_record  # the count is full: no folder more


def test_task_files_are_kept_whole_only_under_outs_own_tasks_folder(
    repo: Path, tmp_path: Path
) -> None:
    out = (tmp_path / "tasks" / "OUT").resolve()
    out.mkdir(parents=True)
    mib = 1 << 20
    for n in range(17):
        (out / f"f{n:02}").write_bytes(b"x" * mib)
    left = _checked_out(repo, out)
    assert left.out_record[str(out / "f16")].item.data is None


@pytest.mark.parametrize("name", ["s.jsonl", "report.xml"])
def test_a_file_of_out_swapped_for_a_link_to_its_own_bytes_is_a_change(
    repo: Path, tmp_path: Path, name: str
) -> None:
    # A link reads the same bytes, and a log may grow: neither may hide that the file is now a
    # link the agent can point anywhere later.
    out = _out(tmp_path)
    path = out / name
    path.write_text('{"a": 1}\n', encoding="utf-8")
    left = _checked_out(repo, out)
    copy = tmp_path / "copy"
    copy.write_bytes(path.read_bytes() + b'{"b": 2}\n')
    path.unlink()
    path.symlink_to(copy)
    assert f"OUT/{name} changed" in left.finish()
    assert not path.is_symlink() and path.read_text(encoding="utf-8") == '{"a": 1}\n'


def test_a_log_of_out_swapped_for_a_fifo_is_a_change_read_without_blocking(
    repo: Path, tmp_path: Path
) -> None:
    out = _out(tmp_path)
    log = out / "s.jsonl"
    log.write_text('{"a": 1}\n', encoding="utf-8")
    left = _checked_out(repo, out)
    log.unlink()
    os.mkfifo(log)  # reading it would wait for a writer for ever
    assert "OUT/s.jsonl changed" in left.finish()
    assert log.read_text(encoding="utf-8") == '{"a": 1}\n'


def test_every_changed_submodule_git_file_is_put_back_and_no_unchanged_one_is_named(
    repo: Path, tmp_path: Path
) -> None:
    names = ["a", "b", "c", "d"]
    for name in names:
        _gitlink(repo, name)
        (repo / name).mkdir()
        (repo / name / ".git").write_text(f"gitdir: ../.git/modules/{name}\n", encoding="utf-8")
    left = prepare(repo, (repo,), "landlock", writable_git=True, out_dir=None)
    evil = tmp_path / "evil"
    for name in ("b", "d"):  # between and after unchanged ones, in the order they are read
        (repo / name / ".git").write_text(f"gitdir: {evil}/.git\n", encoding="utf-8")
    reason = left.finish()
    for name in names:
        changed = name in ("b", "d")
        assert (f"{repo}/{name}/.git changed" in reason) is changed, (name, reason)
        said = (repo / name / ".git").read_text(encoding="utf-8")
        assert said == f"gitdir: ../.git/modules/{name}\n", name


def test_a_link_of_out_met_once_the_bytes_kept_are_spent_is_still_compared_by_its_target(
    repo: Path, tmp_path: Path
) -> None:
    # No budget holds a link back: it is kept as the link it is, whatever the files before it
    # spent, so one turned to point elsewhere comes back.
    out = _out(tmp_path)
    for n in range(16):  # 16 MiB less 3,200 bytes, kept; what is left is less than the link
        (out / f"f{n:02}.bin").write_bytes(b"x" * ((1 << 20) - 200))
    (out / "sub").mkdir()  # walked after the files of OUT
    target = "t" * 4000
    (out / "sub" / "link").symlink_to(target)
    left = _checked_out(repo, out)
    assert left.out_record[str(out / "sub" / "link")].item.kind == "symlink"
    (out / "sub" / "link").unlink()
    (out / "sub" / "link").symlink_to("/etc/passwd")
    reason = left.finish()
    assert "OUT/sub/link changed" in reason and "but not" not in reason
    assert os.readlink(out / "sub" / "link") == target
