"""Every path the runner pins or locks under bubblewrap is held (DESIGN 24), not only the first
or the last: each pinned folder keeps its name and stays writable, each locked path is
read-only, however many there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.workspace import Sandbox, probe
from tests.workspace.sandbox.test_probing import run_confined


@pytest.mark.skipif(probe("bwrap").backend != "bwrap", reason="bwrap does not work here")
def test_every_pinned_folder_cannot_be_renamed_and_every_locked_one_is_read_only(
    tmp_path: Path,
) -> None:
    work = tmp_path / "w"
    names = ("a", "b", "c")
    for name in names:
        (work / f"pinned-{name}").mkdir(parents=True)
        (work / f"locked-{name}").mkdir()
    (tmp_path / "scratch" / "tmp").mkdir(parents=True)
    sandbox = Sandbox(
        "bwrap",
        str(probe("bwrap").executable),
        work,
        tmp_path / "scratch",
        locked=tuple(work / f"locked-{name}" for name in names),
        pinned=tuple(work / f"pinned-{name}" for name in names),
    )
    script = "".join(
        f"mv pinned-{n} moved-{n} 2>/dev/null && echo MOVED-PINNED-{n};"
        f" touch pinned-{n}/x && echo WROTE-PINNED-{n};"
        f" touch locked-{n}/x 2>/dev/null && echo WROTE-LOCKED-{n};"
        f" mv locked-{n} moved-l-{n} 2>/dev/null && echo MOVED-LOCKED-{n};"
        for n in names
    )
    assert run_confined(sandbox, script, work).split() == [f"WROTE-PINNED-{n}" for n in names]
