"""The ports of a host rule (DESIGN 19), each pinned: a rule without a port allows 80 and 443
(each of them, in every form of rule) and no other; a rule with a port allows that one only.
And the proxy variables a task's commands get, every one of them."""

from __future__ import annotations

import pytest

from runner.workspace import NetPath, match_rule, parse_rule, proxied
from runner.workspace.sandbox.netpath import unconfined_env

FORMS = {
    "pypi.org": "pypi.org",
    "*.npmjs.org": "registry.npmjs.org",
    "10.1.2.3": "10.1.2.3",
    "[2001:db8::1]": "2001:db8::1",
    "2001:db8::2": "2001:db8::2",
}
"""Each form of rule without a port, and a host it names."""
OTHER_PORTS = (0, 1, 22, 79, 81, 442, 444, 8080, 8443, 65535)


@pytest.mark.parametrize("port", [80, 443])
@pytest.mark.parametrize("text", list(FORMS))
def test_a_rule_without_a_port_allows_each_default_port(text: str, port: int) -> None:
    rule = parse_rule(text)
    assert rule.port is None
    assert match_rule([rule], FORMS[text], port) is rule


@pytest.mark.parametrize("text", list(FORMS))
def test_a_rule_without_a_port_allows_no_other_port(text: str) -> None:
    rule = parse_rule(text)
    assert [p for p in OTHER_PORTS if match_rule([rule], FORMS[text], p)] == []


@pytest.mark.parametrize("port", [80, 443, 22, 8443])
def test_a_rule_with_a_port_allows_that_port_and_not_the_defaults(port: int) -> None:
    rule = parse_rule(f"pypi.org:{port}")
    allowed = [p for p in (80, 443, 22, 8443, 8080) if match_rule([rule], "pypi.org", p)]
    assert allowed == [port]


def test_the_first_rule_that_allows_a_port_answers() -> None:
    """Two rules for one host: the one whose ports fit, whichever is listed first."""
    web, ssh = parse_rule("git.example"), parse_rule("git.example:22")
    for rules in ([web, ssh], [ssh, web]):
        assert match_rule(rules, "git.example", 22) is ssh
        assert match_rule(rules, "git.example", 80) is web
        assert match_rule(rules, "git.example", 443) is web


NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.mark.parametrize("name", NAMES)
def test_every_proxy_variable_in_either_case_points_at_the_proxy(name: str) -> None:
    env = NetPath(None, 4321, "tok3n-secret").env(5555)
    assert env[name] == "http://agent-runner:tok3n-secret@127.0.0.1:5555"


@pytest.mark.parametrize("name", ["NO_PROXY", "no_proxy"])
def test_no_proxy_in_either_case_names_every_loopback_spelling(name: str) -> None:
    env = NetPath(None, 4321, "s").env(4321)
    assert env[name].split(",") == ["localhost", "127.0.0.1", "::1"]


def test_the_proxy_variables_are_given_back_when_the_body_raises() -> None:
    with pytest.raises(RuntimeError), proxied({"HTTP_PROXY": "x"}):
        assert unconfined_env() == {"HTTP_PROXY": "x"}
        raise RuntimeError("the task failed")
    assert unconfined_env() == {}


@pytest.mark.parametrize("entry", [None, 5, "", "   "])
def test_an_entry_that_is_no_text_is_a_problem_not_a_crash(entry: object) -> None:
    from runner.workspace import rule_problems

    [(index, message)] = rule_problems([entry])  # type: ignore[list-item]
    assert index == 0 and "an empty host" in message
