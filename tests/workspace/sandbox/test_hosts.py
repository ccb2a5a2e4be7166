"""The hosts of a network allowlist (DESIGN 19): how a rule is written and what it allows."""

from __future__ import annotations

import pytest

from runner.workspace import match_rule, parse_rule, rule_problems


@pytest.mark.parametrize(
    ("text", "host", "port", "wildcard"),
    [
        ("pypi.org", "pypi.org", None, False),
        ("PyPI.org.", "pypi.org", None, False),
        ("*.npmjs.org", "npmjs.org", None, True),
        ("github.com:443", "github.com", 443, False),
        ("127.0.0.1:8443", "127.0.0.1", 8443, False),
        ("[::1]:80", "::1", 80, False),
        ("::1", "::1", None, False),
    ],
)
def test_a_rule_is_a_name_or_an_ip_with_an_optional_port(
    text: str, host: str, port: int | None, wildcard: bool
) -> None:
    rule = parse_rule(text)
    assert (rule.host, rule.port, rule.wildcard, rule.text) == (host, port, wildcard, text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("https://pypi.org/simple", "is a URL, not a host"),
        ("pypi.org/simple", "is a URL, not a host"),
        ("py*.org", "a wildcard may only start the host"),
        ("*.*.org", "a wildcard may only start the host"),
        ("pypi.org:0", "from 1 to 65535"),
        ("pypi.org:65536", "from 1 to 65535"),
        ("pypi.org:http", "from 1 to 65535"),
        ("[::1", "closing ']'"),
        ("*.10.0.0.1", "an IP address takes no wildcard"),
        ("pypi..org", "is not a host name"),
        ("py pi.org", "is not a host name"),
        ("", "an empty host"),
        ("a" * 300, "at most 253"),
    ],
)
def test_a_bad_rule_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(text)
    assert says in str(caught.value)


def test_an_empty_list_is_a_problem_of_its_own() -> None:
    assert rule_problems([]) == [(-1, rule_problems([])[0][1])]
    assert "network: false" in rule_problems([])[0][1]
    assert [index for index, _ in rule_problems(["ok.org", "bad/x", "fine.org:1"])] == [1]


def test_a_rule_without_a_port_allows_80_and_443_only() -> None:
    rules = [parse_rule("pypi.org")]
    assert match_rule(rules, "pypi.org", 443) is rules[0]
    assert match_rule(rules, "PYPI.ORG.", 80) is rules[0]
    assert match_rule(rules, "pypi.org", 22) is None
    assert match_rule(rules, "files.pypi.org", 443) is None


def test_a_wildcard_allows_subdomains_not_the_domain_or_lookalikes() -> None:
    rules = [parse_rule("*.npmjs.org")]
    assert match_rule(rules, "registry.npmjs.org", 443) is rules[0]
    assert match_rule(rules, "a.b.npmjs.org", 443) is rules[0]
    assert match_rule(rules, "npmjs.org", 443) is None
    assert match_rule(rules, "evilnpmjs.org", 443) is None


def test_a_port_rule_allows_that_port_only_and_ip_literals_match_normalised() -> None:
    rules = [parse_rule("github.com:22"), parse_rule("[::1]:8080")]
    assert match_rule(rules, "github.com", 22) is rules[0]
    assert match_rule(rules, "github.com", 443) is None
    assert match_rule(rules, "0:0:0:0:0:0:0:1", 8080) is rules[1]
