"""What the probe records for `net` when the trial's datagram arrives (DESIGN 24): the runner
checks its UDP listener after the trial, and a datagram there means `net` does not hold; but
a finding the trial made itself (a TCP connect, a DNS answer) is kept as the trial wrote it,
and a trial that failed is reported as failed, whatever reached the listener.

With stand-in `bwrap` programs (`test_probe.py`) that send the datagram to the port the trial
is given, and answer as a given sandbox would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runner.workspace.sandbox.probing import probe
from tests.workspace.sandbox.test_probe import (  # noqa: F401 (fixtures)
    NOTHING_MISSING,
    _answers,
    _fake_bwrap,
    fresh,
    only_fakes,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sandboxes")

# The trial's arguments after RW and RO: SOCKET PORT UDP PID START; $5 is the UDP port.
SEND = (
    f"{sys.executable} -I -S -c "
    '"import socket, sys; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto('
    "b'probe', ('127.0.0.1', int(sys.argv[1])))\" \"$5\"\n"
)
TCP = "a TCP connect to a loopback listener succeeded"


@pytest.mark.parametrize(
    ("found", "sent", "net"),
    [
        ({}, True, "a UDP datagram reached a loopback listener"),
        ({}, False, None),
        ({"net": TCP}, True, TCP),
        ({"net": "a DNS lookup was answered"}, True, "a DNS lookup was answered"),
        ({"net": TCP}, False, TCP),
    ],
)
def test_a_datagram_that_arrives_is_net_unless_the_trial_found_more(
    only_fakes: Path,  # noqa: F811
    found: dict[str, str],
    sent: bool,
    net: str | None,
) -> None:
    answer: dict[str, object] = {**NOTHING_MISSING, **found}
    _fake_bwrap(only_fakes, (SEND if sent else "") + _answers(answer))
    missing = dict(probe("bwrap").missing)
    assert missing.get("net") == net, missing


def test_a_trial_that_fails_after_its_datagram_arrived_is_reported_failed(
    only_fakes: Path,  # noqa: F811
) -> None:
    _fake_bwrap(only_fakes, SEND + "echo 'bwrap: no' >&2\nexit 1\n")
    found = probe("bwrap")
    assert found.backend is None and found.reason == "bwrap: the trial command failed (bwrap: no)"
