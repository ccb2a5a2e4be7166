"""The runner's own git, kept apart from what the agent can write (DESIGN sections 12, 15, 18, 24).

`gitsafe` runs git so that no program of the repository's (filter, fsmonitor, hook) runs: a
minimal environment and a `Shadow` git folder over the recorded repository. `worktree` makes,
diffs and removes a task's worktree (`isolation: worktree`). `checkout` records a session's paths
relative to its checkout, for a resume elsewhere. `guard` keeps the repository's git folder
from the agent (DESIGN 24): what bubblewrap binds read-only, and the record that is compared
and restored at the end where no backend can.
"""

from __future__ import annotations

from runner.workspace.git.checkout import (
    Located,
    checkout_record,
    checkout_root,
    locate_in_checkout,
)
from runner.workspace.git.gitsafe import (
    GIT_TIMEOUT_S,
    SAFE_CONFIG,
    GitError,
    GitFolder,
    Shadow,
    git_env,
    record_folder,
    run_git,
)
from runner.workspace.git.guard import (
    GitPlaces,
    GitRecord,
    Item,
    digest_of,
    git_places,
    item_of,
    protected,
    put_back,
    record,
)
from runner.workspace.git.links import gitlink_entries
from runner.workspace.git.worktree import (
    Repository,
    Worktree,
    create_worktree,
    remove_worktree,
    repository_of,
    task_diff,
)

__all__ = [
    "GitPlaces",
    "GitRecord",
    "Item",
    "digest_of",
    "git_places",
    "item_of",
    "protected",
    "put_back",
    "record",
    "GIT_TIMEOUT_S",
    "SAFE_CONFIG",
    "GitError",
    "GitFolder",
    "Located",
    "Repository",
    "Shadow",
    "Worktree",
    "checkout_record",
    "checkout_root",
    "create_worktree",
    "git_env",
    "gitlink_entries",
    "locate_in_checkout",
    "record_folder",
    "remove_worktree",
    "repository_of",
    "run_git",
    "task_diff",
]
