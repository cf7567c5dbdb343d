"""Link health rules without I/O (docs/api-guide.md, section 15): what a check's answers mean, when a
link is declared gone or unreachable, when it is checked next, and how checks are spaced out.

A check observes a chain of answers (each redirect hop and the final answer) or a failure before any
final answer (the name does not resolve, a timeout, a refused connection, a redirect loop).
:func:`classify` turns that into a :class:`Verdict`; :func:`decide` combines the verdict with what was
known before into the link's new :class:`LinkState` and the time of its next check. ``gone`` and
``unreachable`` are only declared when confirmed: a failing check, then another failing check at least
``LinkPolicy.retry`` later, with no success in between.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Literal

LinkStatus = Literal["ok", "moved", "gone", "blocked", "unreachable"]
LINK_STATUSES: Final[tuple[LinkStatus, ...]] = ("ok", "moved", "gone", "blocked", "unreachable")
FailureKind = Literal["gone", "unreachable"]

# Why a check ended without a final answer (the probe's own failures, never an HTTP status).
ProbeFailure = Literal[
    "dns",  # the host does not resolve
    "timeout",  # no complete answer before the deadline
    "connection",  # refused or reset connections, TLS and protocol errors
    "blocked-address",  # the host, or a redirect's host, has an address the platform never connects to
    "invalid-url",  # the URL, or a redirect's location, is not a fetchable http(s) URL
    "redirect-loop",  # a redirect back to a URL of the same chain
    "too-many-redirects",
]
PROBE_FAILURES: Final[tuple[ProbeFailure, ...]] = (
    "dns",
    "timeout",
    "connection",
    "blocked-address",
    "invalid-url",
    "redirect-loop",
    "too-many-redirects",
)

PERMANENT_REDIRECTS: Final = frozenset({301, 308})
BLOCKING_STATUSES: Final = frozenset({401, 403, 429, 451})
GONE_STATUSES: Final = frozenset({404, 410})
# 416: the ranged GET asked for bytes an empty resource does not have; the resource is there.
_ALSO_OK: Final = frozenset({416})

# Politeness (docs/api-guide.md, section 15): one request at a time per host, this far apart.
HOST_SPACING: Final = timedelta(seconds=2)
# Regular checks are spread over interval × (1 ± JITTER) so that they never come in waves.
JITTER: Final = 0.1


@dataclass(frozen=True, slots=True)
class Hop:
    """One answer of a chain: the URL asked and its HTTP status; ``location`` is where a redirect points
    (absolute), None for a final answer."""

    url: str
    status: int
    location: str | None = None


@dataclass(frozen=True, slots=True)
class Observation:
    """What one check saw: the answers in order, and ``failure`` when it ended without a final answer.
    ``bot_wall``: the final answer is a known bot challenge (a CDN's "checking your browser" page)."""

    hops: tuple[Hop, ...] = ()
    failure: ProbeFailure | None = None
    bot_wall: bool = False

    @property
    def label(self) -> str:
        """The outcome in a word, for metrics and the check row: ``http-404``, ``dns``, ``timeout``..."""
        if self.failure is not None:
            return self.failure
        return f"http-{self.hops[-1].status}" if self.hops else "none"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one check says; ``moved_to`` is set with ``moved``."""

    kind: LinkStatus
    moved_to: str | None = None

    @property
    def failure(self) -> FailureKind | None:
        if self.kind == "gone":
            return "gone"
        if self.kind == "unreachable":
            return "unreachable"
        return None


def classify(observation: Observation, *, normalized_url: str, normalize: Callable[[str], str]) -> Verdict:
    """The verdict of one check of ``normalized_url`` (``normalize`` raises ValueError for a URL it refuses).

    - a chain ending in 2xx is ``ok``, unless a permanent redirect (301/308) of the chain led to another
      normalized URL: then ``moved``, ``moved_to`` being where the last permanent redirect points (for a
      chain of permanent redirects, where it ends). Temporary redirects (302/303/307) never move a link.
    - 401, 403, 429, 451 and bot walls are ``blocked``: the page may be fine for a person.
    - 404, 410, and a host that does not resolve, are ``gone``.
    - timeouts, connection errors, 5xx, other answers, redirect loops, too many redirects and redirects to
      something that is no URL are ``unreachable``.
    - a host (or a redirect's host) with a non-public address is ``blocked``: the platform never connects
      there, and a person on that network may well reach it.
    """
    failure = observation.failure
    if failure is not None:
        if failure == "dns":
            return Verdict("gone")
        if failure == "blocked-address":
            return Verdict("blocked")
        return Verdict("unreachable")
    if not observation.hops:
        return Verdict("unreachable")
    final = observation.hops[-1].status
    if observation.bot_wall or final in BLOCKING_STATUSES:
        return Verdict("blocked")
    if final in GONE_STATUSES:
        return Verdict("gone")
    if not (200 <= final < 300 or final in _ALSO_OK):
        return Verdict("unreachable")
    moved_to = _permanent_target(observation.hops[:-1])
    if moved_to is not None and _normalized(normalize, moved_to) != normalized_url:
        return Verdict("moved", moved_to=moved_to)
    return Verdict("ok")


def _permanent_target(redirects: Sequence[Hop]) -> str | None:
    target: str | None = None
    for hop in redirects:
        if hop.status in PERMANENT_REDIRECTS and hop.location is not None:
            target = hop.location
    return target


def _normalized(normalize: Callable[[str], str], url: str) -> str | None:
    try:
        return normalize(url)
    except ValueError:
        return None


# --- the state of a link and its next check --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinkPolicy:
    """``interval``: between regular checks (LINK_CHECK_INTERVAL_DAYS); ``retry``: after a first failure, and
    the least time between the two failing checks that confirm gone or unreachable (LINK_CHECK_RETRY_HOURS)."""

    interval: timedelta
    retry: timedelta


@dataclass(frozen=True, slots=True)
class LinkState:
    """What is known about a normalized URL. ``status`` and ``moved_to`` are what the last settled check
    said (null: never settled), ``settled_at`` when; ``failing_since`` is the first check of the current
    run of failures and ``failure`` the kind that run started with."""

    status: LinkStatus | None = None
    moved_to: str | None = None
    settled_at: datetime | None = None
    failing_since: datetime | None = None
    failure: FailureKind | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """The new state, when to check next, and whether the check settled the status (then every bookmark of
    the URL is told, even when the status stayed the same: its ``linkCheckedAt`` moves)."""

    state: LinkState
    next_check_at: datetime
    settled: bool


def decide(previous: LinkState, verdict: Verdict, *, now: datetime, policy: LinkPolicy, jitter: float) -> Decision:
    """The link's state after a check at ``now`` that gave ``verdict``; ``jitter`` is uniform in [0, 1).

    A success (ok, moved, blocked) settles at once and ends a run of failures. A failure starts a run (the
    status stays as it was; re-checked after ``policy.retry``), or, once the run is at least
    ``policy.retry`` old, settles as ``gone`` when it started with and still is a gone failure, else as
    ``unreachable``. A failing check earlier than that (a check asked for by a user) changes nothing but
    keeps the run's retry time.
    """
    failure = verdict.failure
    if failure is None:
        state = LinkState(status=verdict.kind, moved_to=verdict.moved_to, settled_at=now)
        return Decision(state, regular_check_at(now, policy, jitter), settled=True)
    if previous.failing_since is None or previous.failure is None:
        state = replace(previous, failing_since=now, failure=failure)
        return Decision(state, now + policy.retry, settled=False)
    if now - previous.failing_since < policy.retry:
        return Decision(previous, previous.failing_since + policy.retry, settled=False)
    status: LinkStatus = "gone" if previous.failure == "gone" and failure == "gone" else "unreachable"
    state = replace(previous, status=status, moved_to=None, settled_at=now)
    return Decision(state, regular_check_at(now, policy, jitter), settled=True)


def regular_check_at(now: datetime, policy: LinkPolicy, jitter: float) -> datetime:
    """``now`` + interval × (1 ± JITTER), ``jitter`` in [0, 1) choosing where in that range."""
    return now + policy.interval * (1 - JITTER + 2 * JITTER * jitter)


def first_check_at(now: datetime, policy: LinkPolicy, jitter: float) -> datetime:
    """When a URL nobody checked yet is first due: anywhere in the coming interval, so that an import of
    thousands of bookmarks spreads over the interval instead of coming as one wave.

    Evenly over the first interval × (1 - JITTER), then thinning out linearly to interval × (1 + JITTER):
    the wait until a check for a URL already on its regular schedule (every interval × (1 ± JITTER)) seen
    at a random moment. An import's checks then stay as even in its second month as in its first; first
    checks spread evenly over the whole interval would meet the early second checks of the first ones in
    the interval's last days (about 1.4 × the mean a day there, then 0.6 × for the next three).
    ``jitter`` in [0, 1) chooses where.
    """
    if jitter <= 1 - JITTER:
        return now + policy.interval * jitter
    return now + policy.interval * ((1 + JITTER) - 2 * math.sqrt(JITTER * (1 - jitter)))


# --- politeness --------------------------------------------------------------------------------------------


def rate_allows(next_slot_at: datetime | None, now: datetime) -> bool:
    """Whether the global rate lets a request start at ``now``."""
    return next_slot_at is None or next_slot_at <= now


def next_rate_slot(now: datetime, rate_per_second: float) -> datetime:
    """The earliest start of the request after one starting at ``now``."""
    return now + timedelta(seconds=1 / rate_per_second)


def host_free_at(finished_at: datetime) -> datetime:
    """When the host of a request that ended at ``finished_at`` may be asked again."""
    return finished_at + HOST_SPACING


@dataclass(frozen=True, slots=True)
class Candidate:
    """A due check as the claim sees it: its URL, its host and when the host is free (None: never asked)."""

    normalized_url: str
    host: str
    host_free_at: datetime | None


def pick(candidates: Sequence[Candidate], now: datetime) -> Candidate | None:
    """The first due check (in due order) whose host is free at ``now``."""
    for candidate in candidates:
        if candidate.host_free_at is None or candidate.host_free_at <= now:
            return candidate
    return None
