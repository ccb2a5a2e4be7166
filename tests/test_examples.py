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


def test_no_workflow_installs_the_runner_from_pypi_by_the_taken_name():
    """`agent-runner` on PyPI is another project: every install is this repository's source or
    the `agent-runner-ci` distribution, and the distribution keeps the `agent-runner` command."""
    import re
    import tomllib

    files = [
        REPO / "action.yml",
        REPO / "Dockerfile",
        *sorted((REPO / ".github" / "workflows").glob("*.yml")),
        *sorted((REPO / "examples" / "workflows").glob("*.yml")),
    ]
    installs = [
        (path.name, line.strip())
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"\bpip\b.*\binstall\b", line)
    ]
    assert installs
    for name, line in installs:
        assert not re.search(r"(?<![\w/.-])agent[-_]runner(?![\w-])(?!\s*@)", line), (name, line)
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "agent-runner-ci"
    assert project["scripts"] == {"agent-runner": "runner.cli:entry"}


def test_the_release_workflow_publishes_with_trusted_publishing_and_a_multi_arch_image():
    import yaml

    release = yaml.safe_load(
        (REPO / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    )
    assert release[True]["push"]["tags"]  # `on:` parses as True
    jobs = release["jobs"]
    assert jobs["pypi"]["permissions"] == {"id-token": "write"}
    assert any("pypa/gh-action-pypi-publish" in s.get("uses", "") for s in jobs["pypi"]["steps"])
    (build,) = [s for s in jobs["image"]["steps"] if "build-push-action" in s.get("uses", "")]
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["push"] is True
    (meta,) = [s for s in jobs["image"]["steps"] if "metadata-action" in s.get("uses", "")]
    assert "ghcr.io/" in meta["with"]["images"]
    assert "type=ref,event=tag" in meta["with"]["tags"]
    assert "value=latest" in meta["with"]["tags"]


def test_the_review_workflow_uploads_the_sarif_and_posts_the_review():
    import yaml

    workflow = yaml.safe_load(
        (REPO / "examples" / "workflows" / "review.yml").read_text(encoding="utf-8")
    )
    job = workflow["jobs"]["review"]
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    (upload,) = [s for s in steps if "upload-sarif" in s.get("uses", "")]
    assert upload["with"]["sarif_file"] == "agent-runs/findings.sarif"
    (post,) = [s for s in steps if "gh api" in s.get("run", "")]
    assert "agent-runs/review.json" in post["run"] and "--input review.json" in post["run"]
    (review,) = [s for s in steps if "--fail-on error" in s.get("run", "")]
    assert 'git diff "$BASE...HEAD"' in review["run"]
