"""read_file, write_to_file, replace_in_file and list_files."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.workspace.files import MAX_LIST_ENTRIES, MAX_READ_LINES, Files, parse_blocks
from runner.workspace.paths import WorkspaceError


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_read_file_numbers_lines(files: Files, root: Path) -> None:
    write(root, "a.txt", "one\ntwo\nthree\n")
    assert files.read("a.txt") == "1 | one\n2 | two\n3 | three"


def test_read_file_shows_a_line_range_with_a_note(files: Files, root: Path) -> None:
    write(root, "a.txt", "".join(f"line {n}\n" for n in range(1, 21)))
    text = files.read("a.txt", start_line=9, end_line=11)
    assert text.splitlines() == [
        " 9 | line 9",
        "10 | line 10",
        "11 | line 11",
        text.splitlines()[-1],
    ]
    assert "lines 9-11 of 20" in text


def test_read_file_caps_long_files(files: Files, root: Path) -> None:
    write(root, "big.txt", "x\n" * (MAX_READ_LINES + 5))
    text = files.read("big.txt")
    assert f"lines 1-{MAX_READ_LINES} of {MAX_READ_LINES + 5}" in text


def test_read_file_refuses_binary_files(files: Files, root: Path) -> None:
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(WorkspaceError, match="binary file"):
        files.read("img.png")


def test_read_file_of_a_missing_file_says_so(files: Files) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        files.read("nope.txt")


def test_write_to_file_creates_parent_folders(files: Files, root: Path) -> None:
    message = files.write("a/b/c.txt", "hi\n")
    assert (root / "a/b/c.txt").read_text(encoding="utf-8") == "hi\n"
    assert message.startswith("Created a/b/c.txt")


def test_replace_in_file_applies_blocks_in_order(files: Files, root: Path) -> None:
    write(root, "m.py", "def f():\n    return 1\n\ndef g():\n    return 2\n")
    diff = (
        "<<<<<<< SEARCH\n    return 1\n=======\n    return 10\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\ndef g():\n    return 2\n=======\n"
        "def g():\n    return 20\n>>>>>>> REPLACE\n"
    )
    assert files.replace("m.py", parse_blocks(diff)) == "Applied 2 edit(s) to m.py"
    assert (root / "m.py").read_text(encoding="utf-8") == (
        "def f():\n    return 10\n\ndef g():\n    return 20\n"
    )


def test_replace_in_file_keeps_crlf_line_endings(files: Files, root: Path) -> None:
    (root / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    files.replace("w.txt", [("a\nb", "x\ny")])
    assert (root / "w.txt").read_bytes() == b"x\r\ny\r\nc\r\n"


def test_replace_in_file_with_no_match_shows_the_closest_lines(files: Files, root: Path) -> None:
    write(root, "m.py", "alpha\nbeta = 1\ngamma\n")
    with pytest.raises(WorkspaceError) as info:
        files.replace("m.py", [("beta  = 1", "beta = 2")])
    assert "does not match" in str(info.value)
    assert "2 | beta = 1" in str(info.value)


def test_replace_in_file_with_an_ambiguous_match_names_the_lines(files: Files, root: Path) -> None:
    write(root, "m.py", "x = 1\ny\nx = 1\n")
    with pytest.raises(WorkspaceError, match=r"matches 2 places .*lines 1, 3"):
        files.replace("m.py", [("x = 1", "x = 2")])


def test_replace_in_file_refuses_a_file_changed_since_it_was_read(files: Files, root: Path) -> None:
    path = write(root, "m.py", "x = 1\n")
    files.read("m.py")
    path.write_text("x = 1\n# changed by someone else\n", encoding="utf-8")
    with pytest.raises(WorkspaceError, match="changed since you last read it"):
        files.replace("m.py", [("x = 1", "x = 2")])
    files.read("m.py")
    files.replace("m.py", [("x = 1", "x = 2")])
    assert path.read_text(encoding="utf-8").startswith("x = 2")


def test_replace_in_file_after_own_write_needs_no_new_read(files: Files, root: Path) -> None:
    files.write("m.py", "x = 1\n")
    files.replace("m.py", [("x = 1", "x = 2")])
    files.replace("m.py", [("x = 2", "x = 3")])
    assert (root / "m.py").read_text(encoding="utf-8") == "x = 3\n"


def test_parse_blocks_without_a_block_explains_the_format() -> None:
    with pytest.raises(WorkspaceError, match="<<<<<<< SEARCH"):
        parse_blocks("replace foo with bar")


def test_list_files_honours_gitignore_and_skips_dot_git(files: Files, root: Path) -> None:
    write(root, ".gitignore", "build/\n*.log\n")
    write(root, "src/main.py", "")
    write(root, "src/.gitignore", "generated.py\n")
    write(root, "src/generated.py", "")
    write(root, "build/out.js", "")
    write(root, "debug.log", "")
    write(root, ".git/HEAD", "")
    assert files.list(".", recursive=True).splitlines() == [
        ".gitignore",
        "src/",
        "src/.gitignore",
        "src/main.py",
    ]
    assert files.list(".").splitlines() == [".gitignore", "src/"]
    assert files.list("src").splitlines() == ["src/.gitignore", "src/main.py"]


def test_list_files_is_bounded_with_a_note(files: Files, root: Path) -> None:
    for n in range(MAX_LIST_ENTRIES + 10):
        (root / f"f{n:04}.txt").touch()
    lines = files.list(".").splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert "listing cut" in lines[-1]
