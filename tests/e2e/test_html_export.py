"""`log export --format html` (DESIGN section 17) on a real run, through the CLI, and in Chromium.

One run against the fake model server: the first model call fails and is retried, the parent
reads a hostile file (markup, a script, the provider key) with a post_tool hook watching, then
starts a `reader` sub-agent that reads the same file. The run folder is exported to one page.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from runner.sessionlog import SessionRecord
from tests.e2e.conftest import API_KEY, REPO, Done, Scenario, call, clean_env, complete, start
from tests.fakes.model_server import FakeModelServer, fault, reply

HOSTILE = (
    "EVIL-START </pre></details><script>document.title='PWNED'</script>"
    f"<img src=x onerror=\"document.title='PWNED'\"> key={API_KEY} EVIL-END"
)
CHILD_TASK = "R-TASK: what does evil.txt say?"
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)


@pytest.fixture(scope="module")
def run(module_dir: Path) -> tuple[Done, Path]:
    routes = {CHILD_TASK[:6]: [reply(call("read_file", path="evil.txt")), complete("child saw")]}
    steps = [
        fault("http_error", status=503),
        reply("Reading the file first.\n" + call("read_file", path="evil.txt")),
        reply("Asking the reader.\n" + call("sub_agent", agent="reader", task=CHILD_TASK)),
        complete("parent finished"),
    ]
    task = {
        "prompt": "Report what evil.txt says.",
        "agents": {
            "reader": {
                "description": "Reads files.",
                "prompt": "You read files.",
                "tools": {"allow": ["read_file"]},
            }
        },
        "hooks": {"post_tool": [{"match": ["read_file"], "run": "echo HOOK-SAW-IT"}]},
        "limits": {"max_turns": 6},
    }
    with FakeModelServer(steps, routes=routes) as server:
        done = start(Scenario(task=task, files={"evil.txt": HOSTILE}), module_dir, server).wait()
    assert done.code == 0, done.explain()
    page = done.root / "report.html"
    exported = subprocess.run(
        [sys.executable, "-m", "runner", "log", "export", "--format", "html", "OUT", "-o", page],
        cwd=done.root,
        env=clean_env(done.root),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    return done, page


def _flat(text: str) -> str:
    return " ".join(text.split())


def _parent_and_child(done: Done) -> tuple[SessionRecord, SessionRecord]:
    (parent,) = [r for r in done.logs() if not r.header.get("parent_session_id")]
    (child,) = [r for r in done.logs() if r.header.get("parent_session_id")]
    return parent, child


def _shown_messages(record: SessionRecord) -> list[str]:
    """The messages a transcript shows as messages (tool results are shown with their calls)."""
    messages = [e for e in record.events if e["type"] == "message"]
    return [str(m["content"]) for m in messages if m["role"] == "assistant" or m["turn"] == 0]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def test_the_page_holds_overview_messages_calls_child_and_marks(run):
    done, page = run
    html = page.read_text(encoding="utf-8")
    parent, child = _parent_and_child(done)
    assert "<h2>Overview</h2>" in html
    overview = html.split("<h2>Overview</h2>", 1)[1].split("</table>", 1)[0]
    assert overview.count("<tbody><tr>") == 1  # the child is not a task of its own
    assert 'class="st-passed">passed</td>' in overview and "1 sessions" in overview
    totals = parent.end["totals"] if parent.end else {}
    assert f"${totals['cost_usd']:.4f}" in overview
    for record in (parent, child):
        for content in _shown_messages(record):
            assert escape(content) in html, content
        for event in record.events:
            if event["type"] == "tool_call":
                assert escape(str(event["result"])) in html
                assert f"{escape(event['tool'])} · " in html
    # The child is nested right after the sub_agent call that started it, in its own block.
    call_at = html.index("sub_agent · ok")
    child_at = html.index(f'id="s-{child.session_id}"')
    assert call_at < child_at < html.index("parent finished", call_at)
    assert '<details class="child session"' in html[call_at:child_at]
    assert "retry: attempt 1 after" in html and "(status 503)" in html
    assert "hook post_tool on read_file `echo HOOK-SAW-IT`: ok" in html


def test_hostile_text_is_escaped_and_secrets_stay_masked(run):
    _, page = run
    html = page.read_text(encoding="utf-8")
    assert API_KEY not in html and "key=***" in html
    assert "&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;" in html
    tags = _tags(html)
    assert not [t for t, _ in tags if t in ("script", "img", "link", "iframe", "object")]
    assert not [a for _, attrs in tags for a in attrs if a.startswith("on")]
    # Self-contained: nothing is loaded from anywhere, and the policy forbids it anyway.
    assert not re.search(r"(src|href)=\"(?!#)", html)
    assert "default-src 'none'" in html
    assert [t for t, _ in tags].count("details") == html.count("</details>")


def _chromium(url: str, profile: Path) -> str:
    """The DOM of `url` after its scripts ran, from headless Chromium."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


PROBE = """<script>
const out = {};
const calls = [...document.querySelectorAll('details.tool')];
const d = calls.find(c => c.textContent.includes('EVIL-START'));
const result = d.querySelector('pre:last-of-type');
const seen = () => [d.open, result.checkVisibility(),
                    document.body.innerText.includes('EVIL-START')];
out.before = seen();
d.querySelector('summary').click();
out.opened = seen();
d.querySelector('summary').click();
out.closed = seen();
d.querySelector('summary').click();
out.text = document.body.innerText;
out.title = document.title;
document.body.setAttribute('data-probe', JSON.stringify(out));
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
def test_in_chromium_the_page_renders_every_message_and_a_result_folds(run, tmp_path):
    done, page = run
    html = page.read_text(encoding="utf-8")
    # The page itself runs no script (its policy forbids any); the probe needs that lifted.
    probed = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html, count=1)
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(probed.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = _chromium(probe_page.as_uri(), tmp_path / "profile")
    (body,) = [attrs for tag, attrs in _tags(dom) if tag == "body"]
    probe: dict[str, Any] = json.loads(str(body["data-probe"]))
    assert probe["before"] == [False, False, False]
    assert probe["opened"] == [True, True, True]
    assert probe["closed"] == [False, False, False]
    assert probe["title"] != "PWNED"
    text = _flat(probe["text"])
    assert "EVIL-START </pre></details><script>" in text  # shown as text once unfolded
    parent, child = _parent_and_child(done)
    for record in (parent, child):
        for content in _shown_messages(record):
            assert _flat(content) in text, content
    assert "Overview" in text and "retry: attempt 1" in text


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed (apt-get install chromium)")
def test_in_chromium_the_real_page_runs_nothing_from_the_log(run, tmp_path):
    _, page = run
    dom = _chromium(page.as_uri(), tmp_path / "profile")
    tags = _tags(dom)
    assert not [t for t, _ in tags if t in ("script", "img")]
    assert "PWNED" not in dict(_tags(dom)).get("title", {}) and "<title>agent-runner" in dom
    assert escape("</details><script>", quote=False) in dom


def test_the_replay_example_exports(run_cli, tmp_path):
    hello = REPO / "examples" / "sessions" / "hello.jsonl"
    out = tmp_path / "hello.html"
    result = run_cli("log", "export", "--format", "html", str(hello), "-o", str(out))
    assert result.returncode == 0, result.stderr
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.count('<details class="tool') == 2
