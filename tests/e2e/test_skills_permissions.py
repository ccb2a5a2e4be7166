"""Skills and permission rules end to end (DESIGN section 14), through the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Done, Scenario, complete, run_all, tool_reply
from tests.fakes.mcp_test_server import SCRIPT as PROBE_SERVER

SKILL = """\
---
name: release-notes
description: Write release notes
  from the git history.
license: MIT
---
STEP ONE of the release-notes skill: read the tags.
See template.md.
"""
WORKDIR_SKILL = """\
---
name: lint-rules
description: The house lint rules for Python files.
---
Run ruff with the house rules.
"""
BAD_SKILL = """\
---
name: broken
description: [unclosed
---
body
"""
PROBE = {
    "probe": {"type": "stdio", "cmd": sys.executable, "args": [str(PROBE_SERVER)]},
}
VALIDATE = ["validate", "t.yaml"]

SCENARIOS = {
    "skills": Scenario(
        task={"skills": ["skills"]},
        extra_files={
            "skills/release-notes/SKILL.md": SKILL,
            "skills/release-notes/template.md": "## Changes\n- TEMPLATE LINE\n",
        },
        files={".agents/skills/lint-rules/SKILL.md": WORKDIR_SKILL, "secret.txt": "s3cret\n"},
        steps=[
            tool_reply("load_skill", name="release-notes"),
            tool_reply("load_skill", name="release-notes", file="template.md"),
            tool_reply("load_skill", name="release-notes", file="../../w/secret.txt"),
            tool_reply("load_skill", name="lint-rules"),
            complete(),
        ],
    ),
    "deny": Scenario(
        task={
            "permissions": {
                "deny": ["execute_command(git push*)", "write_to_file(.github/**)"],
            }
        },
        steps=[
            tool_reply("execute_command", command="git init -q && git status"),
            tool_reply("execute_command", command="git push origin main; touch pushed.txt"),
            tool_reply("execute_command", command="cd .  &&  git   push; touch pushed.txt"),
            tool_reply("write_to_file", path="./docs/../.github/ci.yml", content="x"),
            complete(),
        ],
    ),
    "allow": Scenario(
        task={"permissions": {"allow": ["execute_command(echo *)"]}},
        steps=[
            tool_reply("execute_command", command="echo ok"),
            tool_reply("execute_command", command="echo ok > a.txt"),
            tool_reply("execute_command", command="echo ok && touch b.txt"),
            complete(),
        ],
    ),
    "child": Scenario(
        task={
            "permissions": {"deny": ["execute_command(git push*)"]},
            "hooks": {"post_tool": [{"match": ["execute_command"], "run": "echo HOOKED"}]},
            "agents": {
                "runner": {
                    "description": "Runs commands.",
                    "prompt": "You run commands.",
                    "tools": {"allow": ["execute_command"]},
                }
            },
        },
        steps=[
            tool_reply("sub_agent", agent="runner", task="push the branch"),
            tool_reply("execute_command", command="git push origin main; touch pushed.txt"),
            tool_reply("execute_command", command="echo child ran"),
            complete("the push was refused"),
            complete("done"),
        ],
    ),
    "mcp_rule": Scenario(
        task={"extensions": PROBE, "permissions": {"deny": ["echo(forbidden*)"]}},
        steps=[
            tool_reply("echo", text="forbidden words"),
            tool_reply("echo", text="fine words"),
            complete(),
        ],
    ),
    "mcp_rule_typo": Scenario(
        task={"extensions": PROBE, "permissions": {"deny": ["ecko(forbidden*)"]}},
        steps=[complete()],
    ),
    "validate_typo": Scenario(
        task={"permissions": {"deny": ["execute_comand(git push*)"]}}, args=VALIDATE
    ),
    "run_typo": Scenario(
        task={"permissions": {"deny": ["execute_comand(git push*)"]}}, steps=[complete()]
    ),
    "validate_bad_skill": Scenario(
        task={"skills": ["skills"]},
        extra_files={"skills/broken/SKILL.md": BAD_SKILL},
        args=VALIDATE,
    ),
    "validate_bad_workdir_skill": Scenario(
        task={}, files={".agents/skills/broken/SKILL.md": "no front matter\n"}, args=VALIDATE
    ),
    "validate_missing_skills": Scenario(task={"skills": ["nowhere"]}, args=VALIDATE),
}


@pytest.fixture(scope="module")
def runs(module_dir: Path) -> dict[str, Done]:
    return run_all(SCENARIOS, module_dir)


def _results(done: Done) -> list[dict[str, Any]]:
    return done.events("tool_call")


def _system(done: Done) -> str:
    messages = done.requests[0].body["messages"]
    return str(next(m["content"] for m in messages if m["role"] == "system"))


def test_skills_are_listed_by_description_only_then_loaded(runs):
    done = runs["skills"]
    assert done.code == 0, done.explain()
    system = _system(done)
    assert "# SKILLS" in system
    assert "- release-notes: Write release notes from the git history." in system
    assert "STEP ONE" not in system
    body, template, escape, _ = _results(done)
    assert "STEP ONE of the release-notes skill" in body["result"]
    assert "template.md" in body["result"]  # the files the skill can load are named
    assert "TEMPLATE LINE" in template["result"]
    assert escape["is_error"] and "s3cret" not in escape["result"]
    assert "outside" in escape["result"]
    assert "STEP ONE" in json.dumps(done.requests[1].body["messages"])


def test_skills_are_found_in_the_workdirs_agents_folder(runs):
    done = runs["skills"]
    assert "- lint-rules: The house lint rules for Python files." in _system(done)
    assert "Run ruff with the house rules." in _results(done)[3]["result"]


def test_a_deny_rule_blocks_git_push_while_git_status_runs(runs):
    done = runs["deny"]
    assert done.code == 0, done.explain()
    status, push, sneaky_push, workflow = _results(done)
    assert not status["is_error"] and "exit code 0" in status["result"]
    for denied in (push, sneaky_push):
        assert denied["is_error"]
        assert "denied by the permission rule 'execute_command(git push*)'" in denied["result"]
    assert workflow["is_error"] and "write_to_file(.github/**)" in workflow["result"]
    workdir = done.root / "w"
    assert not (workdir / "pushed.txt").exists()
    assert not (workdir / ".github").exists()


def test_an_allow_rule_refuses_every_command_it_does_not_match(runs):
    done = runs["allow"]
    allowed, redirected, listed = _results(done)
    assert not allowed["is_error"]
    # DESIGN 18: `echo *` matches no command with a redirection or a list in it.
    for refused in (redirected, listed):
        assert refused["is_error"] and "single simple command" in refused["result"]
    assert not (done.root / "w" / "a.txt").exists()
    assert not (done.root / "w" / "b.txt").exists()


def test_a_rule_for_an_mcp_tool_matches_its_first_required_string(runs):
    done = runs["mcp_rule"]
    assert done.code == 0, done.explain()
    denied, allowed = _results(done)
    assert denied["is_error"] and "echo(forbidden*)" in denied["result"]
    assert not allowed["is_error"] and "fine words" in allowed["result"]


def test_a_rule_naming_no_mcp_tool_stops_the_run_with_exit_2(runs):
    done = runs["mcp_rule_typo"]
    assert done.code == 2, done.explain()
    assert "ecko(forbidden*)" in done.task()["reason"]
    assert done.requests == []  # the model was never called


def test_validate_refuses_a_rule_that_matches_no_tool(runs):
    done = runs["validate_typo"]
    assert done.code == 2, done.explain()
    assert "t.yaml:6:5: permissions.deny[0]:" in done.stderr
    assert "did you mean 'execute_command'?" in done.stderr
    assert "execute_comand(git push*)" in done.stderr


def test_run_refuses_a_rule_that_matches_no_tool_before_anything_runs(runs):
    done = runs["run_typo"]
    assert done.code == 2, done.explain()
    assert "execute_comand" in done.stderr
    assert done.requests == []


def test_validate_reports_bad_front_matter_at_its_line(runs):
    done = runs["validate_bad_skill"]
    assert done.code == 2, done.explain()
    assert "skills/broken/SKILL.md:3:1:" in done.stderr
    bad_workdir = runs["validate_bad_workdir_skill"]
    assert bad_workdir.code == 2, bad_workdir.explain()
    assert ".agents/skills/broken/SKILL.md:1:1:" in bad_workdir.stderr


def test_a_declared_skill_folder_that_does_not_exist_is_exit_2(runs):
    done = runs["validate_missing_skills"]
    assert done.code == 2, done.explain()
    assert "nowhere" in done.stderr and "does not exist" in done.stderr


def test_a_sub_agents_calls_meet_the_tasks_rules_and_hooks(runs):
    done = runs["child"]
    assert done.code == 0, done.explain()
    assert not (done.root / "w" / "pushed.txt").exists()
    child = next(r for r in done.logs() if r.header.get("parent_session_id"))
    push, echo = done.events("tool_call", child)
    assert push["is_error"] and "execute_command(git push*)" in push["result"]
    assert "HOOKED" in echo["result"]
