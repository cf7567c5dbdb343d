"""Link health rules (enrichment.domain.links): every verdict, the confirmation of failures, the schedule
and politeness, on a clock that tests move by hand."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from common.urls import normalize_url
from enrichment.domain.links import (
    HOST_SPACING,
    PROBE_FAILURES,
    Candidate,
    Hop,
    LinkPolicy,
    LinkState,
    Observation,
    ProbeFailure,
    Verdict,
    classify,
    decide,
    first_check_at,
    host_free_at,
    next_rate_slot,
    pick,
    rate_allows,
    regular_check_at,
)

URL = "https://example.com/page"
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
POLICY = LinkPolicy(interval=timedelta(days=30), retry=timedelta(hours=24))


def normalize(url: str) -> str:
    return normalize_url(url).url


def answer(status: int) -> Observation:
    return Observation(hops=(Hop(URL, status),))


def verdict(observation: Observation) -> Verdict:
    return classify(observation, normalized_url=URL, normalize=normalize)


def chain(*redirects: tuple[int, str], final: int = 200) -> Observation:
    hops, current = [], URL
    for status, location in redirects:
        hops.append(Hop(current, status, location))
        current = location
    return Observation(hops=(*hops, Hop(current, final)))


# --- one check ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 204, 206, 299, 416])
def test_success_answers_are_ok(status: int) -> None:
    assert verdict(answer(status)) == Verdict("ok")


@pytest.mark.parametrize("status", [404, 410])
def test_missing_pages_are_gone(status: int) -> None:
    assert verdict(answer(status)) == Verdict("gone")


@pytest.mark.parametrize("status", [401, 403, 429, 451])
def test_refusals_are_blocked_never_dead(status: int) -> None:
    assert verdict(answer(status)) == Verdict("blocked")


def test_a_bot_wall_is_blocked_whatever_its_status() -> None:
    assert verdict(Observation(hops=(Hop(URL, 503),), bot_wall=True)) == Verdict("blocked")
    assert verdict(Observation(hops=(Hop(URL, 200),), bot_wall=True)) == Verdict("blocked")


@pytest.mark.parametrize("status", [500, 502, 503, 504, 400, 405, 418, 300, 304, 100])
def test_server_errors_and_other_answers_are_unreachable(status: int) -> None:
    assert verdict(answer(status)) == Verdict("unreachable")


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        ("dns", "gone"),
        ("timeout", "unreachable"),
        ("connection", "unreachable"),
        ("blocked-address", "blocked"),
        ("invalid-url", "unreachable"),
        ("redirect-loop", "unreachable"),
        ("too-many-redirects", "unreachable"),
    ],
)
def test_probe_failures(failure: ProbeFailure, kind: str) -> None:
    assert verdict(Observation(failure=failure)).kind == kind


def test_every_probe_failure_has_a_verdict() -> None:
    assert {verdict(Observation(failure=f)).kind for f in PROBE_FAILURES} <= {"gone", "unreachable", "blocked"}


def test_no_answer_at_all_is_unreachable() -> None:
    assert verdict(Observation()) == Verdict("unreachable")


@pytest.mark.parametrize("status", [301, 308])
def test_a_permanent_redirect_to_another_page_is_moved(status: int) -> None:
    assert verdict(chain((status, "https://example.org/new"))) == Verdict("moved", "https://example.org/new")


def test_a_chain_of_permanent_redirects_moves_to_where_it_ends() -> None:
    observed = chain((301, "https://example.com/b"), (308, "https://example.com/c"), (301, "https://example.com/d"))
    assert verdict(observed) == Verdict("moved", "https://example.com/d")


def test_a_permanent_then_temporary_redirect_moves_to_the_permanent_address() -> None:
    observed = chain((301, "https://example.com/b"), (302, "https://example.com/login"))
    assert verdict(observed) == Verdict("moved", "https://example.com/b")


@pytest.mark.parametrize("status", [302, 303, 307])
def test_temporary_redirects_are_ok(status: int) -> None:
    assert verdict(chain((status, "https://example.org/elsewhere"))) == Verdict("ok")


def test_a_permanent_redirect_to_the_same_normalized_url_is_ok() -> None:
    # www., a default port, tracking parameters: normalization says it is the same page.
    assert verdict(chain((301, "https://www.example.com:443/page?utm_source=x"))) == Verdict("ok")


def test_http_to_https_is_another_normalized_url() -> None:
    observed = classify(
        Observation(hops=(Hop("http://a.example/", 301, "https://a.example/"), Hop("https://a.example/", 200))),
        normalized_url="http://a.example/",
        normalize=normalize,
    )
    assert observed == Verdict("moved", "https://a.example/")


def test_a_moved_page_that_is_missing_is_gone_and_a_blocked_one_blocked() -> None:
    assert verdict(chain((301, "https://example.org/new"), final=404)) == Verdict("gone")
    assert verdict(chain((308, "https://example.org/new"), final=403)) == Verdict("blocked")
    assert verdict(chain((301, "https://example.org/new"), final=503)) == Verdict("unreachable")


def test_labels() -> None:
    assert answer(404).label == "http-404"
    assert Observation(failure="dns").label == "dns"
    assert Observation().label == "none"


# --- confirmation ------------------------------------------------------------------------------------------


def run(checks: list[tuple[timedelta, Verdict]], start: LinkState | None = None) -> list[tuple[LinkState, bool]]:
    state, out = start or LinkState(), []
    for offset, seen in checks:
        decision = decide(state, seen, now=T0 + offset, policy=POLICY, jitter=0.5)
        state = decision.state
        out.append((state, decision.settled))
    return out


GONE, DOWN, OK = Verdict("gone"), Verdict("unreachable"), Verdict("ok")


def test_one_failure_never_marks_a_link_gone() -> None:
    ((state, settled),) = run([(timedelta(0), GONE)])
    assert state.status is None and not settled
    assert state.failing_since == T0 and state.failure == "gone"


def test_a_first_failure_is_rechecked_after_the_retry_time() -> None:
    decision = decide(LinkState(status="ok", settled_at=T0), GONE, now=T0, policy=POLICY, jitter=0.5)
    assert decision.next_check_at == T0 + POLICY.retry
    assert decision.state.status == "ok"  # unchanged until confirmed


def test_two_gone_failures_at_least_the_retry_time_apart_are_gone() -> None:
    (_, _), (state, settled) = run([(timedelta(0), GONE), (timedelta(hours=24), GONE)])
    assert state.status == "gone" and settled and state.settled_at == T0 + timedelta(hours=24)


def test_two_failures_too_close_together_are_not_confirmed() -> None:
    results = run([(timedelta(0), GONE), (timedelta(hours=23, minutes=59), GONE)])
    assert results[-1] == (results[0][0], False)
    decision = decide(results[0][0], GONE, now=T0 + timedelta(hours=2), policy=POLICY, jitter=0.5)
    assert decision.next_check_at == T0 + POLICY.retry  # the run's retry time is kept


def test_a_success_in_between_starts_over() -> None:
    results = run([(timedelta(0), GONE), (timedelta(hours=12), OK), (timedelta(hours=24), GONE)])
    assert results[1] == (LinkState(status="ok", settled_at=T0 + timedelta(hours=12)), True)
    assert results[2][0].status == "ok" and not results[2][1]
    assert results[2][0].failing_since == T0 + timedelta(hours=24)


def test_404_then_200_stays_ok() -> None:
    results = run([(timedelta(0), OK), (timedelta(days=30), GONE), (timedelta(days=31), OK)])
    assert [s.status for s, _ in results] == ["ok", "ok", "ok"]
    assert [settled for _, settled in results] == [True, False, True]


def test_unreachable_needs_two_failures_too() -> None:
    results = run([(timedelta(0), DOWN), (timedelta(hours=24), DOWN)])
    assert results[0][0].status is None and results[1][0].status == "unreachable"


def test_mixed_failures_are_unreachable() -> None:
    assert run([(timedelta(0), GONE), (timedelta(hours=24), DOWN)])[-1][0].status == "unreachable"
    assert run([(timedelta(0), DOWN), (timedelta(hours=24), GONE)])[-1][0].status == "unreachable"


def test_a_confirmed_failure_stays_while_it_fails_and_ends_with_a_success() -> None:
    results = run(
        [(timedelta(0), GONE), (timedelta(hours=24), GONE), (timedelta(days=31), GONE), (timedelta(days=62), OK)]
    )
    assert [s.status for s, _ in results] == [None, "gone", "gone", "ok"]
    assert [settled for _, settled in results] == [False, True, True, True]


def test_a_move_clears_when_the_page_fails_and_is_kept_with_its_address() -> None:
    moved = Verdict("moved", "https://example.org/new")
    results = run([(timedelta(0), moved), (timedelta(days=30), DOWN), (timedelta(days=31), DOWN)])
    assert results[0][0].moved_to == "https://example.org/new"
    assert results[1][0].status == "moved"  # unconfirmed: as it was
    assert results[2][0].status == "unreachable" and results[2][0].moved_to is None


def test_blocked_settles_at_once_and_ends_a_run_of_failures() -> None:
    results = run([(timedelta(0), GONE), (timedelta(hours=24), Verdict("blocked"))])
    assert results[1] == (LinkState(status="blocked", settled_at=T0 + timedelta(hours=24)), True)


# --- schedule -----------------------------------------------------------------------------------------------


def test_regular_checks_are_spread_around_the_interval() -> None:
    earliest = regular_check_at(T0, POLICY, 0.0)
    latest = regular_check_at(T0, POLICY, 0.999999)
    assert earliest == T0 + timedelta(days=27)
    assert T0 + timedelta(days=32, hours=23) < latest < T0 + timedelta(days=33)
    assert regular_check_at(T0, POLICY, 0.5) == T0 + timedelta(days=30)
    spread = {regular_check_at(T0, POLICY, i / 100) for i in range(100)}
    assert len(spread) == 100  # no wave: every jitter value gives its own time


def test_settled_checks_are_scheduled_with_jitter() -> None:
    decision = decide(LinkState(), OK, now=T0, policy=POLICY, jitter=0.0)
    assert decision.next_check_at == T0 + timedelta(days=27)


def test_first_checks_spread_over_the_whole_interval() -> None:
    assert first_check_at(T0, POLICY, 0.0) == T0
    assert first_check_at(T0, POLICY, 0.5) == T0 + timedelta(days=15)
    assert first_check_at(T0, POLICY, 0.9) == T0 + timedelta(days=27)
    # The last tenth thins out to the latest regular check, in order.
    tail = [first_check_at(T0, POLICY, 0.9 + i / 1000) for i in range(100)]
    assert tail == sorted(tail) and tail[-1] < T0 + timedelta(days=33)
    assert first_check_at(T0, POLICY, 0.999999) > T0 + timedelta(days=32, hours=23)


def test_an_imports_checks_never_come_in_waves() -> None:
    """100,000 URLs saved at once, each checked first and then regularly with random jitter: over three
    months, no day has more than 1.5 × the mean number of checks (in fact none is 10 % off it)."""
    rng = random.Random(139)
    days = 90
    per_day: Counter[int] = Counter()
    for _ in range(100_000):
        at = first_check_at(T0, POLICY, rng.random())
        while (day := (at - T0).days) < days:
            per_day[day] += 1
            at = regular_check_at(at, POLICY, rng.random())
    mean = sum(per_day.values()) / days
    counts = [per_day[d] for d in range(days)]
    assert max(counts) <= 1.1 * mean, (max(counts) / mean, counts.index(max(counts)))
    assert min(counts) >= 0.9 * mean, (min(counts) / mean, counts.index(min(counts)))


# --- politeness -----------------------------------------------------------------------------------------------


def test_the_global_rate_spaces_request_starts() -> None:
    assert rate_allows(None, T0)
    slot = next_rate_slot(T0, 2.0)
    assert slot == T0 + timedelta(milliseconds=500)
    assert not rate_allows(slot, T0 + timedelta(milliseconds=499))
    assert rate_allows(slot, T0 + timedelta(milliseconds=500))
    # At 2 per second, 10 requests need at least 4.5 s from the first start to the last.
    now, starts = T0, []
    slot_at: datetime | None = None
    while len(starts) < 10:
        if rate_allows(slot_at, now):
            starts.append(now)
            slot_at = next_rate_slot(now, 2.0)
        now += timedelta(milliseconds=100)
    assert starts[-1] - starts[0] == timedelta(seconds=4.5)


def test_a_host_is_asked_again_two_seconds_after_its_last_answer() -> None:
    assert host_free_at(T0) == T0 + HOST_SPACING == T0 + timedelta(seconds=2)


def test_pick_skips_busy_hosts_in_due_order() -> None:
    busy = T0 + timedelta(seconds=1)
    candidates = [
        Candidate("https://a.example/1", "a.example", busy),
        Candidate("https://a.example/2", "a.example", busy),
        Candidate("https://b.example/1", "b.example", T0),
        Candidate("https://c.example/1", "c.example", None),
    ]
    assert pick(candidates, T0) == candidates[2]
    assert pick(candidates[:2], T0) is None
    assert pick(candidates[:2], busy) == candidates[0]
    assert pick([], T0) is None
