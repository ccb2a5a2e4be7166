"""Every shipped example task validates, as the README promises."""

from __future__ import annotations

from tests.conftest import REPO


def test_validate_accepts_every_example_task(run_cli):
    result = run_cli("validate", str(REPO / "examples" / "tasks"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok: ")


def test_example_suite_takes_a_param_override(run_cli):
    suite = REPO / "examples" / "tasks" / "docs-suite.yaml"
    result = run_cli("validate", str(suite), "--param", "audience=beginners")
    assert result.returncode == 0, result.stderr
