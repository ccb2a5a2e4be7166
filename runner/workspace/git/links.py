"""The `.git` files of a work tree's submodules (DESIGN 24): `git status` recurses into each
gitlink of the index that holds a `.git`, and runs git there with the config of the git folder
it names. A task that may commit (Landlock, `sandbox.git: writable`) could add a gitlink and a
`.git` file naming a git folder of its own; `gitlink_entries` lists them, so that what appeared
or changed is compared and put back like the rest of the git folder.

The index is read by the runner's own git (`gitsafe`: the minimal environment, `SAFE_CONFIG`),
after the repository's config has been put back; its paths are bounded and must stay inside the
work tree."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import PurePosixPath

from runner.workspace.git.gitsafe import GIT_TIMEOUT_S, SAFE_CONFIG, git_env
from runner.workspace.git.guard import GitPlaces, Item, item_of

__all__ = ["gitlink_entries"]

_LINK_LIMIT = 1000
_GITLINK = "160000"


def gitlink_entries(places: GitPlaces, env: Mapping[str, str]) -> dict[str, Item]:
    """The `.git` entry of each gitlink in the index, by path; {} when the index cannot be
    read."""
    top = places.entry.parent
    pinned = git_env(env, GIT_DIR=str(places.git_dir), GIT_WORK_TREE=str(top))
    try:
        done = subprocess.run(
            ["git", *SAFE_CONFIG, "ls-files", "--stage", "-z"],
            cwd=top,
            env=pinned,
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found: dict[str, Item] = {}
    for record in done.stdout.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if not meta.startswith(_GITLINK.encode()):
            continue
        rel = PurePosixPath(name.decode("utf-8", errors="surrogateescape"))
        # "", "." and "./" have no parts: the work tree itself, whose `.git` is the repository's.
        if not rel.parts or rel.is_absolute() or any(p in ("..", ".git") for p in rel.parts):
            continue
        entry = top.joinpath(*rel.parts, ".git")
        found[str(entry)] = item_of(entry)
        if len(found) >= _LINK_LIMIT:
            break
    return found
