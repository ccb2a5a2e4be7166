"""The hosts of a network allowlist (DESIGN 19): `pypi.org`, `*.npmjs.org`, `github.com:443`,
`127.0.0.1:8443`, `[::1]:80`.

A rule is a host name or an IP literal, with an optional port; without one it allows ports 80
and 443. `*.` in front allows every subdomain (not the domain itself, which is listed on its
own). Anything else, a scheme, a path, a wildcard in the middle, a port out of range, is a
`ValueError` whose message says how to write the rule. Parsing is by hand, without a regex,
over a length-bounded string.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DEFAULT_PORTS", "HostRule", "match_rule", "parse_rule", "rule_problems"]

DEFAULT_PORTS = (80, 443)
"""The ports a rule without a port allows."""
_MAX_NAME = 253
"""Characters of a host name (DNS), without its final dot."""
_MAX_LENGTH = len("*.") + _MAX_NAME + len(".:65535")
"""The longest rule that can be valid; longer text is refused before it is parsed."""
_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


@dataclass(frozen=True)
class HostRule:
    """One entry of `sandbox.network`."""

    text: str
    """As written: how a refusal and the reports name it."""
    host: str
    """Lower case, without the `*.` and without brackets around an IPv6 literal."""
    wildcard: bool = False
    """`*.host`: any subdomain of `host`."""
    port: int | None = None
    """The one port allowed; None: 80 and 443."""

    def allows(self, host: str, port: int) -> bool:
        """Whether a connection to `host` (lower case, no brackets) on `port` fits the rule."""
        if port not in ((self.port,) if self.port is not None else DEFAULT_PORTS):
            return False
        if self.wildcard:
            return host.endswith("." + self.host)
        return host == self.host


def parse_rule(text: str) -> HostRule:
    """The rule `text` names. Raises ValueError with what is wrong and how to write it."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("an empty host; write a name such as pypi.org")
    if len(text) > _MAX_LENGTH:
        raise ValueError(f"a host of {len(text)} characters; a name has at most {_MAX_NAME}")
    if "://" in text or "/" in text:
        raise ValueError(
            f"{text!r} is a URL, not a host; write the host alone, such as "
            f"{_host_of_url(text)!r} (the proxy allows every path on it)"
        )
    host, port = _split_port(text.strip())
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    if "*" in name:
        raise ValueError(
            f"{text!r}: a wildcard may only start the host, as in '*.npmjs.org' (every subdomain)"
        )
    if _ip(name) is not None:
        if wildcard:
            raise ValueError(f"{text!r}: an IP address takes no wildcard")
        return HostRule(text, str(_ip(name)), port=port)
    _check_name(text, name)
    return HostRule(text, name.lower().rstrip("."), wildcard, port)


def rule_problems(rules: Sequence[str]) -> list[tuple[int, str]]:
    """`(index, message)` per bad entry of a `sandbox.network` list; an empty list is one
    problem at index -1 (it would allow nothing: `false` says that)."""
    if not rules:
        return [(-1, "an empty network list allows nothing; write `network: false` for that")]
    problems = []
    for index, text in enumerate(rules):
        try:
            parse_rule(text)
        except ValueError as exc:
            problems.append((index, str(exc)))
    return problems


def match_rule(rules: Sequence[HostRule], host: str, port: int) -> HostRule | None:
    """The first rule that allows `host:port`, or None."""
    host = host.lower().rstrip(".")
    if (ip := _ip(host)) is not None:
        host = str(ip)
    return next((rule for rule in rules if rule.allows(host, port)), None)


def _split_port(text: str) -> tuple[str, int | None]:
    if text.startswith("["):  # [::1] or [::1]:80
        end = text.find("]")
        if end < 0:
            raise ValueError(f"{text!r}: an IPv6 address in brackets needs its closing ']'")
        rest = text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r}: write '[ADDRESS]:PORT'")
        return text[1:end], _port(text, rest[1:]) if rest else None
    if text.count(":") > 1:  # a bare IPv6 address: no port
        return text, None
    host, colon, port = text.partition(":")
    return host, _port(text, port) if colon else None


def _port(text: str, port: str) -> int:
    if not port.isdigit() or len(port) > 5 or not 1 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    return int(port)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _check_name(text: str, name: str) -> None:
    bare = name.lower().rstrip(".")
    if len(bare) > _MAX_NAME:
        raise ValueError(
            f"{text!r}: a host name has at most {_MAX_NAME} characters, not {len(bare)}"
        )
    for label in bare.split("."):
        if not label or len(label) > 63 or not set(label) <= _LABEL_CHARS:
            raise ValueError(
                f"{text!r} is not a host name; write letters, digits, '-' and dots, such as "
                "pypi.org, optionally with ':PORT'"
            )


def _host_of_url(text: str) -> str:
    rest = text.partition("://")[2] or text
    return rest.split("/", 1)[0] or "pypi.org"
