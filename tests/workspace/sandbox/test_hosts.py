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


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("[::1]", "::1", None),
        ("pypi.org:1", "pypi.org", 1),
        ("pypi.org:65535", "pypi.org", 65535),
        (f"{'a' * 63}.org", f"{'a' * 63}.org", None),
        (
            "abcdefghijklmnopqrstuvwxyz0123456789-_.org",
            "abcdefghijklmnopqrstuvwxyz0123456789-_.org",
            None,
        ),
        ("  pypi.org  ", "pypi.org", None),
    ],
)
def test_the_edges_of_a_valid_rule_are_allowed(text: str, host: str, port: int | None) -> None:
    rule = parse_rule(text)
    assert (rule.host, rule.port) == (host, port)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[::1]80", "write '[ADDRESS]:PORT'"),
        ("[::1]:", "from 1 to 65535"),
        (f"{'a' * 64}.org", "is not a host name"),
        ("pypi.org:000443", "from 1 to 65535"),
    ],
)
def test_a_bad_bracket_port_or_label_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(text)
    assert str(caught.value).startswith(repr(text)) and says in str(caught.value)


def test_a_refusal_names_the_rule_as_written() -> None:
    for text in ("py pi.org:443", "pypi.org:99999", "*.py*.org:443", "*.10.0.0.1:80"):
        with pytest.raises(ValueError) as caught:
            parse_rule(text)
        assert str(caught.value).startswith(f"{text!r}"), str(caught.value)


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://files.example.com/simple", "files.example.com"),
        ("files.example.com/simple", "files.example.com"),
        ("file:///etc/hosts", "pypi.org"),
    ],
)
def test_a_url_is_refused_with_the_host_to_write_instead(url: str, host: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(url)
    assert f"write the host alone, such as {host!r}" in str(caught.value)


NAME_253 = ".".join(["a" * 63] * 3 + ["b" * 61])


def test_a_name_of_253_characters_is_a_host_in_every_form_and_254_is_not() -> None:
    assert len(NAME_253) == 253
    for text in (NAME_253, f"{NAME_253}.", f"*.{NAME_253}.:65535"):
        assert parse_rule(text).host == NAME_253, text
    for text in (f"c{NAME_253}", f"c{NAME_253}:443", f"*.c{NAME_253}:443"):
        with pytest.raises(ValueError) as caught:
            parse_rule(text)
        assert str(caught.value).startswith(f"{text!r}: a host name has at most 253"), text


def test_a_huge_entry_is_refused_without_being_echoed() -> None:
    for text in ("a" * 100_000, f"pypi.org:{'1' * 100_000}", f"[{':' * 100_000}]"):
        with pytest.raises(ValueError) as caught:
            parse_rule(text)
        assert str(caught.value) == f"a host of {len(text)} characters; a name has at most 253"
