"""Every shipped example task validates, as the README promises; the README is a short front
door whose commands work, and the documentation site builds strictly."""

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


# -- the front door and the documentation site (issue 46) --------------------------------------

README = REPO / "README.md"


def _sh_blocks(text: str) -> list[str]:
    import re

    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL)]


def test_the_readmes_first_commands_are_the_demo_and_the_whole_suite_as_ci_runs_it():
    first, second, *_ = _sh_blocks(README.read_text(encoding="utf-8"))
    assert first.endswith(
        "agent-runner run examples/tasks/hello.yaml --model replay:examples/sessions/hello.jsonl"
    )
    assert "\n" not in first and "\n" not in second  # one line each, to copy whole
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert second == ci  # .ci/run runs the README's test command exactly


def test_the_readme_is_a_front_door_whose_links_all_lead_somewhere():
    import re

    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local
    for link in local:
        assert (REPO / link).exists(), link


def test_the_readmes_task_file_validates(run_cli, tmp_path):
    import re

    text = README.read_text(encoding="utf-8")
    [task] = re.findall(r"## A task file\n\n```yaml\n(.*?)```", text, re.DOTALL)
    (tmp_path / "t.yaml").write_text(task, encoding="utf-8")
    result = run_cli("validate", str(tmp_path / "t.yaml"))
    assert result.returncode == 0, result.stderr


def _build_site(config, site):
    import os
    import subprocess
    import sys

    bin_dir = os.path.dirname(sys.executable)
    return subprocess.run(
        [os.path.join(bin_dir, "mkdocs"), "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_documentation_site_builds_strictly_and_scripts_check_builds_it(tmp_path):
    done = _build_site(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "headless" / "index.html").is_file()
    assert (tmp_path / "site" / "session-log.schema.json").is_file()  # data, published as is
    assert not (tmp_path / "site" / "mutation.json").exists()  # data, not published
    check = (REPO / "scripts" / "check").read_text(encoding="utf-8")
    assert 'mkdocs" build --strict' in check


def test_a_page_left_out_of_the_nav_a_broken_link_or_anchor_fails_the_site_build(tmp_path):
    import shutil

    import pytest

    breakages = {
        "orphan.md": ("orphan.md", "# Not in the nav\n"),
        "no-such-page.md": ("cli.md", "\nSee [nothing](no-such-page.md).\n"),
        "no-such-heading": ("cli.md", "\nSee [nothing](headless.md#no-such-heading).\n"),
    }
    for name, (page, text) in breakages.items():
        root = tmp_path / name
        shutil.copytree(REPO / "docs", root / "docs")
        shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
        with (root / "docs" / page).open("a", encoding="utf-8") as handle:
            handle.write(text)
        done = _build_site(root / "mkdocs.yml", root / "site")
        if done.returncode == 0:
            pytest.fail(f"{name}: the strict build passed\n{done.stderr}")
        assert name in done.stdout + done.stderr, done.stderr
