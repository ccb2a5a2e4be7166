from __future__ import annotations

from runner.prompt.dynamic import WORKSPACE_FILES_LIMIT, HostFacts, dynamic_sections

FACTS = HostFacts(
    os="Linux 6.1 (x86_64)", shell="/bin/bash", user="ci", time="2026-01-01T00:00:00+00:00"
)


def by_title(workdir):
    return {s.title: s.text for s in dynamic_sections(workdir, FACTS)}


def test_system_information_states_the_host_facts(tmp_path):
    text = by_title(tmp_path)["SYSTEM INFORMATION"]
    for fact in ("Linux 6.1", "/bin/bash", str(tmp_path), "2026-01-01T00:00:00", "ci"):
        assert fact in text


def test_workspace_files_honour_gitignore(tmp_path):
    (tmp_path / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.bin").write_text("x", encoding="utf-8")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x", encoding="utf-8")
    (tmp_path / "debug.log").write_text("x", encoding="utf-8")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("x", encoding="utf-8")
    text = by_title(tmp_path)["WORKSPACE FILES"]
    assert "src/app.py" in text and "src/" in text
    assert "build" not in text.split("\n", 1)[1]
    assert "debug.log" not in text and ".git/" not in text
    assert "cut" not in text


def test_workspace_files_say_when_the_listing_was_cut(tmp_path):
    for index in range(WORKSPACE_FILES_LIMIT + 5):
        (tmp_path / f"f{index:04}.txt").write_text("x", encoding="utf-8")
    text = by_title(tmp_path)["WORKSPACE FILES"]
    assert f"Listing cut at {WORKSPACE_FILES_LIMIT} entries" in text
    assert "f0000.txt" in text and f"f{WORKSPACE_FILES_LIMIT + 4:04}.txt" not in text


def test_project_context_comes_from_agents_md_when_present(tmp_path):
    assert "PROJECT CONTEXT" not in by_title(tmp_path)
    (tmp_path / "AGENTS.md").write_text("Run tests with make test.\n", encoding="utf-8")
    assert "Run tests with make test." in by_title(tmp_path)["PROJECT CONTEXT"]
