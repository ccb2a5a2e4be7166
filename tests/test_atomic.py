from __future__ import annotations

import stat

from runner.atomic import write_text_atomic


def test_atomic_write_leaves_a_file_everyone_can_read(tmp_path):
    target = tmp_path / "deep" / "junit.xml"
    write_text_atomic(target, "<testsuites/>\n")
    assert target.read_text(encoding="utf-8") == "<testsuites/>\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert [p.name for p in target.parent.iterdir()] == ["junit.xml"]


def test_atomic_write_replaces_an_existing_file_whole(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("old and longer content", encoding="utf-8")
    write_text_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
