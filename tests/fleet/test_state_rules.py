"""The governor's decisions on a run's state (`runner.fleet.state`), each rule at its edges: the
memory and file stores apply exactly these, so the clock is handed in and every wait is exact."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from runner.fleet import open_store
from runner.fleet import state as decide
from runner.fleet.state import EPSILON_S, Bucket

T = 1_780_000_000.0
"""A moment of the epoch (2026); halves and quarters of a second added to it stay exact."""


def fresh() -> dict[str, Any]:
    return decide.new_state(T)


def held(state: dict[str, Any], now: float, rid: str, amount: float, cap: float | None) -> bool:
    return decide.reserve(state, now, "a", rid, amount, cap, 60.0)[0]


# -- the figures ----------------------------------------------------------------------------------


def test_a_run_no_shard_has_touched_shows_nothing_spent_held_counted_or_paused() -> None:
    assert decide.status(fresh(), T) == {
        "spent_usd": 0.0,
        "reserved_usd": 0.0,
        "reservations": 0,
        "max_cost_usd": None,
        "calls": 0,
        "refused": 0,
        "expired": 0,
        "shards": 0,
        "waits": 0,
        "wait_s": 0.0,
        "rate_limited": 0,
        "paused_s": 0.0,
    }


def test_money_is_shown_to_the_millionth_of_a_dollar_and_waits_to_the_millisecond() -> None:
    state = fresh()
    decide.settle(state, T, "a", "r1", 0.12345678)
    assert decide.reserve(state, T, "a", "r2", 0.00000049, None, 60.0)[0]
    assert decide.reserve(state, T, "a", "r3", 0.0000002, None, 60.0)[0]
    decide.waited(state, 1.23456)
    decide.pause(state, T, "a", "openai", 2.34567)
    figures = decide.status(state, T)
    assert figures["spent_usd"] == 0.123457
    assert figures["reserved_usd"] == 0.000001
    assert figures["wait_s"] == 1.235
    assert figures["paused_s"] == 2.346


def test_every_decision_counts_its_shard_once_however_many_calls_it_makes() -> None:
    state = fresh()
    for rid in ("r1", "r2"):
        decide.reserve(state, T, "a", rid, 0.1, None, 60.0)
        decide.settle(state, T, "b", rid, 0.1)
        decide.admit(state, T, "c", rid, "openai", [], 10)
        decide.pause(state, T, "c", "openai", 0.0)
    assert decide.status(state, T)["shards"] == 3


@pytest.mark.parametrize("decision", ["reserve", "settle", "admit", "pause"])
def test_a_run_a_shard_decided_in_within_the_week_is_kept_though_created_long_ago(
    tmp_path: Path, decision: str
) -> None:
    """The file store drops a run a week after the last decision of any shard, as Redis expires
    its keys: every decision records when its shard was last seen."""
    now = time.time()
    old = decide.new_state(now - 30 * 24 * 3600)
    recent = now - 24 * 3600
    if decision == "reserve":
        decide.reserve(old, recent, "a", "r1", 0.5, None, 60.0)
    elif decision == "settle":
        decide.settle(old, recent, "a", "r1", 0.5)
    elif decision == "admit":
        decide.admit(old, recent, "a", "r1", "openai", [], 10)
    else:
        decide.pause(old, recent, "a", "openai", 0.5)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"old": old}), encoding="utf-8")
    asyncio.run(open_store(f"file://{path}").settle("new", "b", "r1", 0.1))
    assert set(json.loads(path.read_text(encoding="utf-8"))) == {"old", "new"}


# -- the cap --------------------------------------------------------------------------------------


def test_a_reservation_that_fills_the_cap_exactly_is_held_and_one_cent_more_is_not() -> None:
    state = fresh()
    decide.settle(state, T, "a", "r0", 0.25)
    assert decide.reserve(state, T, "a", "r1", 0.125, 0.5, 60.0) == (True, 0.25, 0.125)
    assert decide.reserve(state, T, "b", "r2", 0.125, 0.5, 60.0) == (True, 0.25, 0.25)
    assert decide.reserve(state, T, "b", "r3", 0.01, 0.5, 60.0) == (False, 0.25, 0.25)
    figures = decide.status(state, T)
    assert (figures["calls"], figures["refused"], figures["max_cost_usd"]) == (2, 1, 0.5)
    assert (figures["reservations"], figures["reserved_usd"]) == (2, 0.25)


def test_spent_and_held_both_count_against_the_cap() -> None:
    state = fresh()
    decide.settle(state, T, "a", "r0", 0.25)
    assert held(state, T, "r1", 0.125, 0.5)
    # 0.25 spent + 0.125 held + 0.25 asked = 0.625 > 0.5: neither is subtracted from the other.
    assert decide.reserve(state, T, "a", "r2", 0.25, 0.5, 60.0) == (False, 0.25, 0.125)
    # Without a spend, what is held alone counts.
    other = fresh()
    assert held(other, T, "r1", 0.375, 0.5)
    assert not held(other, T, "r2", 0.25, 0.5)


def test_a_reservation_is_held_whatever_the_clock_says_when_it_fits() -> None:
    state = fresh()
    assert decide.reserve(state, T, "a", "r1", 0.5, 1.0, 30.0) == (True, 0.0, 0.5)
    assert decide.reserve(state, T, "a", "r2", 0.25, 1.0, 30.0) == (True, 0.0, 0.75)


def test_every_refusal_is_counted() -> None:
    state = fresh()
    assert held(state, T, "r1", 0.5, 0.5)
    assert not held(state, T, "r2", 0.25, 0.5)
    assert not held(state, T, "r3", 0.25, 0.5)
    assert not held(state, T, "r4", 0.25, 0.5)
    assert decide.status(state, T)["refused"] == 3


def test_every_held_call_is_counted_and_held_apart_even_from_one_shard() -> None:
    state = fresh()
    for rid in ("r1", "r2", "r3"):
        assert held(state, T, rid, 0.125, None)
    figures = decide.status(state, T)
    assert (figures["calls"], figures["reservations"], figures["reserved_usd"]) == (3, 3, 0.375)


def test_without_a_cap_nothing_is_refused_and_no_cap_is_shown() -> None:
    state = fresh()
    assert decide.reserve(state, T, "a", "r1", 1000.0, None, 60.0) == (True, 0.0, 1000.0)
    assert decide.status(state, T)["max_cost_usd"] is None


def test_settling_replaces_the_reservation_by_the_real_cost() -> None:
    state = fresh()
    assert held(state, T, "r1", 0.25, 0.5)
    assert held(state, T, "r2", 0.125, 0.5)
    decide.settle(state, T, "b", "r1", 0.0625)
    decide.settle(state, T, "b", "r2", 0.125)
    figures = decide.status(state, T)
    assert (figures["spent_usd"], figures["reserved_usd"], figures["reservations"]) == (
        0.1875,
        0.0,
        0,
    )
    # A settle whose reservation is gone (expired) still adds its cost.
    decide.settle(state, T, "b", "gone", 0.25)
    assert decide.status(state, T)["spent_usd"] == 0.4375


# -- reservations expire --------------------------------------------------------------------------


def test_a_reservation_lives_exactly_its_ttl() -> None:
    state = fresh()
    assert decide.reserve(state, T, "a", "r1", 0.25, None, 60.0)[0]
    alive = decide.status(state, T + 59.75)
    assert (alive["reservations"], alive["reserved_usd"], alive["expired"]) == (1, 0.25, 0)
    gone = decide.status(state, T + 60.0)
    assert (gone["reservations"], gone["reserved_usd"], gone["expired"]) == (0, 0.0, 1)
    # A reservation made later lives its ttl from then.
    assert decide.reserve(state, T + 100.0, "a", "r2", 0.25, None, 60.0)[0]
    assert decide.status(state, T + 159.75)["reservations"] == 1


def test_an_expired_reservation_frees_the_cap_at_the_moment_it_expires() -> None:
    state = fresh()
    assert decide.reserve(state, T, "a", "r1", 0.5, 0.5, 60.0)[0]
    assert not decide.reserve(state, T + 59.75, "b", "r2", 0.25, 0.5, 60.0)[0]
    assert decide.reserve(state, T + 60.0, "b", "r3", 0.25, 0.5, 60.0) == (True, 0.0, 0.25)
    assert decide.status(state, T + 60.0)["expired"] == 1


def test_every_expired_reservation_is_counted_whether_a_decision_dropped_it_or_not() -> None:
    state = fresh()
    for rid in ("r1", "r2"):
        assert decide.reserve(state, T, "a", rid, 0.125, None, 10.0)[0]
    assert decide.reserve(state, T + 20.0, "a", "r3", 0.125, None, 10.0)[0]  # drops r1 and r2
    assert decide.reserve(state, T + 20.0, "a", "r4", 0.125, None, 100.0)[0]
    assert decide.status(state, T + 20.0)["expired"] == 2
    # r3 expired but no decision dropped it yet: the figures count it all the same.
    figures = decide.status(state, T + 30.0)
    assert (figures["expired"], figures["reservations"], figures["reserved_usd"]) == (3, 1, 0.125)
    assert decide.reserve(state, T + 40.0, "a", "r5", 0.125, None, 100.0)[0]  # drops r3
    assert decide.status(state, T + 40.0)["expired"] == 3


# -- the request and token windows ----------------------------------------------------------------


def openai(rpm: int = 0, tpm: int = 0, window_s: float = 60.0) -> list[Bucket]:
    return [("openai:*", rpm, tpm, window_s)]


def test_rpm_requests_go_at_once_and_the_next_waits_for_the_oldest_to_leave() -> None:
    state = fresh()
    bucket = openai(rpm=3)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 10.0, "b", "r2", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 20.0, "c", "r3", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 30.0, "a", "r4", "openai", bucket, 10) == 30.0
    # The oldest left at T + 60 exactly: one more goes, and then the next waits for the second.
    assert decide.admit(state, T + 60.0, "a", "r4", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 60.0, "a", "r5", "openai", bucket, 10) == 10.0
    assert decide.admit(state, T + 70.0, "a", "r5", "openai", bucket, 10) == 0.0


def test_a_lower_rpm_than_the_window_holds_waits_until_enough_requests_have_left() -> None:
    """Shards configured apart (or a config lowered mid-run) share one window per glob: with
    five requests in it, a shard allowed three waits until three of them have left."""
    state = fresh()
    for n in range(5):
        assert decide.admit(state, T + 10.0 * n, "a", f"r{n}", "openai", openai(rpm=5), 10) == 0.0
    assert decide.admit(state, T + 45.0, "b", "r5", "openai", openai(rpm=3), 10) == 35.0


def test_fewer_requests_than_rpm_never_wait() -> None:
    state = fresh()
    assert decide.admit(state, T, "a", "r1", "openai", openai(rpm=3), 10) == 0.0
    assert decide.admit(state, T + 1.0, "a", "r2", "openai", openai(rpm=3), 10) == 0.0


def test_a_window_of_its_own_length_is_counted_over() -> None:
    state = fresh()
    bucket = openai(rpm=1, window_s=10.0)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 2.5, "a", "r2", "openai", bucket, 10) == 7.5
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", bucket, 10) == 0.0


def test_a_wait_under_a_millisecond_is_a_millisecond() -> None:
    state = fresh()
    bucket = openai(rpm=1)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 10) == 0.0
    wait = decide.admit(state, T + 59.9999, "a", "r2", "openai", bucket, 10)
    assert wait == EPSILON_S == 0.001


def test_a_wait_under_a_second_is_waited() -> None:
    state = fresh()
    bucket = openai(rpm=1)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 59.5, "a", "r2", "openai", bucket, 10) == 0.5


def test_requests_are_counted_each_even_from_one_shard_to_one_provider() -> None:
    state = fresh()
    bucket = openai(rpm=2)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 1.0, "a", "r2", "openai", bucket, 10) == 0.0
    assert decide.admit(state, T + 2.0, "a", "r3", "openai", bucket, 10) == 58.0


def test_every_glob_a_model_matches_counts_it_and_each_window_is_its_own() -> None:
    state = fresh()
    wide: Bucket = ("openai:*", 2, 0, 60.0)
    narrow: Bucket = ("openai:gpt-5*", 1, 0, 30.0)
    assert decide.admit(state, T, "a", "r1", "openai", [wide, narrow], 10) == 0.0
    # The narrow window is full for 30 s, the wide one has room: the longer wait wins.
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", [wide, narrow], 10) == 20.0
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", [wide], 10) == 0.0
    # Now the wide window is full until the first request leaves it.
    assert decide.admit(state, T + 30.0, "a", "r3", "openai", [wide, narrow], 10) == 30.0
    # Another glob with the same figures has a window of its own.
    assert decide.admit(state, T + 30.0, "a", "r3", "openai", [("openai:o3*", 2, 0, 60.0)], 10) == 0


def test_tokens_fill_the_window_up_to_tpm_exactly() -> None:
    state = fresh()
    bucket = openai(tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 900) == 0.0
    assert decide.admit(state, T + 1.0, "a", "r2", "openai", bucket, 100) == 0.0
    assert decide.admit(state, T + 2.0, "a", "r3", "openai", bucket, 1) == 58.0


def test_a_request_waits_until_enough_of_the_oldest_tokens_leave_and_no_longer() -> None:
    state = fresh()
    bucket = openai(tpm=1000)
    for at, rid in ((0.0, "r1"), (10.0, "r2"), (20.0, "r3")):
        assert decide.admit(state, T + at, "a", rid, "openai", bucket, 300) == 0.0
    # 900 in the window: 200 more must wait for r1 (600 + 200 <= 1000), not for r2.
    assert decide.admit(state, T + 30.0, "a", "r4", "openai", bucket, 200) == 30.0
    # 400 more fit exactly once r1 has left (600 + 400 = 1000); 500 must wait for r2 too.
    assert decide.admit(state, T + 30.0, "a", "r4", "openai", bucket, 400) == 30.0
    assert decide.admit(state, T + 30.0, "a", "r4", "openai", bucket, 500) == 40.0


def test_the_tokens_that_leave_first_are_the_oldest_not_the_smallest() -> None:
    state = fresh()
    bucket = openai(tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 600) == 0.0
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", bucket, 100) == 0.0
    assert decide.admit(state, T + 20.0, "a", "r3", "openai", bucket, 200) == 0.0
    # 900 held: 300 more fit when r1 (the oldest, 600) leaves at T + 60.
    assert decide.admit(state, T + 30.0, "a", "r4", "openai", bucket, 300) == 30.0


def test_a_request_larger_than_tpm_waits_for_the_window_to_empty_then_goes() -> None:
    state = fresh()
    bucket = openai(tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 400) == 0.0
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", bucket, 1) == 0.0
    assert decide.admit(state, T + 20.0, "a", "r3", "openai", bucket, 1500) == 50.0
    assert decide.admit(state, T + 70.0, "a", "r3", "openai", bucket, 1500) == 0.0
    # An empty window lets it through at once: it could never fit otherwise.
    assert (
        decide.admit(state, T + 70.0, "a", "r4", "openai", [("anthropic:*", 0, 10, 60.0)], 1500)
        == 0.0
    )


def test_a_window_whose_replies_used_no_tokens_does_not_hold_a_request_back() -> None:
    state = fresh()
    bucket = openai(tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 900) == 0.0
    decide.tokens_used(state, T + 1.0, "r1", ["openai:*"], 0)
    assert decide.admit(state, T + 2.0, "a", "r2", "openai", bucket, 1500) == 0.0


def test_a_single_token_left_in_the_window_still_counts() -> None:
    state = fresh()
    bucket = openai(tpm=100)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 1) == 0.0
    assert decide.admit(state, T + 20.0, "a", "r2", "openai", bucket, 100) == 40.0


def test_the_rpm_and_tpm_of_one_bucket_each_hold_a_request_back() -> None:
    state = fresh()
    bucket = openai(rpm=2, tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 100) == 0.0
    assert decide.admit(state, T + 10.0, "a", "r2", "openai", bucket, 800) == 0.0
    assert decide.admit(state, T + 20.0, "a", "r3", "openai", bucket, 50) == 40.0  # rpm
    tokens = fresh()
    tpm_only = openai(rpm=5, tpm=1000)
    assert decide.admit(tokens, T, "a", "r1", "openai", tpm_only, 900) == 0.0
    assert decide.admit(tokens, T + 20.0, "a", "r2", "openai", tpm_only, 200) == 40.0  # tpm


def test_the_state_keeps_only_the_requests_still_in_their_window() -> None:
    """The file store rewrites the whole state at every decision: a window that kept every
    request ever admitted would grow the file, and slow each decision, as long as a run lasts."""
    state = fresh()
    bucket = openai(rpm=1000, window_s=60.0)
    for n in range(100):
        assert decide.admit(state, T + 10.0 * n, "a", f"r{n}", "openai", bucket, 10) == 0.0
    # In the window at T + 990: the requests of T + 940 to T + 990 (the one of T + 930 has left).
    assert sorted(state["windows"]["openai:*"]) == [f"r{n}" for n in range(94, 100)]


def test_a_reply_replaces_the_estimate_and_restamps_its_request_at_the_reply() -> None:
    state = fresh()
    bucket = openai(rpm=1, tpm=1000)
    assert decide.admit(state, T, "a", "r1", "openai", bucket, 900) == 0.0
    decide.tokens_used(state, T + 30.0, "r1", ["openai:*"], 100)
    # The request now leaves the window 60 s after its reply, not after its admission.
    assert decide.admit(state, T + 70.0, "a", "r2", "openai", openai(rpm=1), 10) == 20.0
    # Its real count (100) is what the tokens window holds.
    assert decide.admit(state, T + 70.0, "a", "r2", "openai", openai(tpm=1000), 900) == 0.0
    # A glob it was never counted in, and a request never admitted, are left alone.
    decide.tokens_used(state, T + 71.0, "r1", ["anthropic:*"], 5)
    decide.tokens_used(state, T + 71.0, "never", ["openai:*"], 5)
    assert decide.admit(state, T + 71.0, "a", "r3", "openai", openai(rpm=2), 10) == 19.0


def test_a_reply_stamped_before_its_admission_never_moves_its_request_earlier() -> None:
    state = fresh()  # the clock stepped back between the admission and the reply
    assert decide.admit(state, T + 10.0, "a", "r1", "openai", openai(rpm=1), 10) == 0.0
    decide.tokens_used(state, T, "r1", ["openai:*"], 10)
    assert decide.admit(state, T + 65.0, "a", "r2", "openai", openai(rpm=1), 10) == 5.0


# -- the shared pause -----------------------------------------------------------------------------


def test_a_pause_holds_its_provider_until_it_ends_then_the_request_is_counted() -> None:
    state = fresh()
    assert decide.pause(state, T, "a", "openai", 5.0) == 5.0
    assert decide.admit(state, T + 4.5, "b", "r1", "openai", openai(rpm=1), 10) == 0.5
    assert decide.admit(state, T + 4.5, "b", "r1", "anthropic", [], 10) == 0.0
    # The moment it ends the request goes, and it counts in the window.
    assert decide.admit(state, T + 5.0, "b", "r1", "openai", openai(rpm=1), 10) == 0.0
    assert decide.admit(state, T + 5.0, "b", "r2", "openai", openai(rpm=1), 10) == 60.0


def test_a_pause_is_kept_per_provider_not_per_shard_or_request() -> None:
    state = fresh()
    decide.pause(state, T, "openai", "openai", 5.0)
    assert decide.pause(state, T, "a", "anthropic", 2.0) == 2.0
    assert decide.admit(state, T + 1.0, "openai", "openai", "anthropic", [], 10) == 1.0
    assert decide.admit(state, T + 1.0, "anthropic", "anthropic", "openai", [], 10) == 4.0


def test_a_longer_pause_stands_and_a_later_longer_one_extends_it() -> None:
    state = fresh()
    assert decide.pause(state, T, "a", "openai", 10.0) == 10.0
    assert decide.pause(state, T + 2.0, "b", "openai", 3.0) == 8.0
    assert decide.pause(state, T + 4.0, "b", "openai", 20.0) == 20.0
    figures = decide.status(state, T + 4.0)
    assert (figures["rate_limited"], figures["paused_s"]) == (3, 20.0)
    assert decide.status(state, T + 30.0)["paused_s"] == 0.0


def test_waits_are_counted_and_summed() -> None:
    state = fresh()
    decide.waited(state, 1.5)
    decide.waited(state, 0.25)
    decide.waited(state, 2.0)
    figures = decide.status(state, T)
    assert (figures["waits"], figures["wait_s"]) == (3, 3.75)


# -- a week after the last decision ---------------------------------------------------------------


WEEK = 7 * 24 * 3600.0


@pytest.mark.parametrize(("age", "kept"), [(WEEK - 60.0, True), (WEEK + 60.0, False)])
def test_the_file_store_keeps_a_run_for_exactly_a_week_after_its_last_decision(
    tmp_path: Path, age: float, kept: bool
) -> None:
    now = time.time()
    old = decide.new_state(now - age)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"old": old}), encoding="utf-8")
    asyncio.run(open_store(f"file://{path}").settle("new", "b", "r1", 0.1))
    runs = set(json.loads(path.read_text(encoding="utf-8")))
    assert runs == ({"old", "new"} if kept else {"new"})
