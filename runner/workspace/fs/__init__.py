"""The workdir's files, read and written without trusting them (DESIGN sections 5 and 15).

`beneath` opens a path under its root folder without a check-then-open gap (no symlink out, no
`..`); `regular` reads and writes regular files only, never waiting on a FIFO, socket or device;
`confined_read` reads a workdir file for the prompt (inside the workdir only, bounded); `tree`
is the bounded, .gitignore-aware folder walk that the prompt's file list and `list_files` share.
`runner.workspace.search_worker` loads `beneath`, `confined_read` and `tree` by their paths, so
they import nothing of the runner but each other.
"""

from __future__ import annotations

from runner.workspace.fs.beneath import open_beneath
from runner.workspace.fs.confined_read import DEFAULT_PROMPT_FILE_BYTES, Bounded, read_confined
from runner.workspace.fs.regular import read_regular, write_regular
from runner.workspace.fs.tree import Listing, list_tree, walk_entries

__all__ = [
    "DEFAULT_PROMPT_FILE_BYTES",
    "Bounded",
    "Listing",
    "list_tree",
    "open_beneath",
    "read_confined",
    "read_regular",
    "walk_entries",
    "write_regular",
]
