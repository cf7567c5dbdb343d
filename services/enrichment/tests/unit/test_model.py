"""Enrichment rules without I/O: quotas, month boundaries, retry schedule, snapshot status, settings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from enrichment.domain.model import (
    FREE_PER_MONTH,
    check_quota,
    month_of,
    next_month_start,
    normalize_tags,
    public_result,
    quota_use,
    retry_delay,
    snapshot_status,
)
from enrichment.settings import Settings

NOW = datetime(2031, 5, 17, 12, 0, 0, tzinfo=UTC)


def test_month_boundaries_are_utc() -> None:
    assert month_of(datetime(2031, 12, 31, 23, 59, 59, tzinfo=UTC)).isoformat() == "2031-12-01"
    assert next_month_start(datetime(2031, 12, 31, 23, 59, 59, tzinfo=UTC)) == datetime(2032, 1, 1, tzinfo=UTC)
    # 01:30 on the 1st in UTC+2 is still the previous month in UTC.
    plus_two = datetime(2031, 6, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    assert month_of(plus_two).isoformat() == "2031-05-01"


def test_quota_allows_until_the_minute_window_is_full() -> None:
    assert check_quota(now=NOW, month_used=0, recent_charges=[]) is None
    four = [NOW - timedelta(seconds=s) for s in (1, 2, 3, 4)]
    assert check_quota(now=NOW, month_used=4, recent_charges=four) is None
    five = [NOW - timedelta(seconds=s) for s in (5, 10, 20, 30, 50)]
    rejection = check_quota(now=NOW, month_used=5, recent_charges=five)
    assert rejection is not None and rejection.kind == "minute"
    assert rejection.retry_after_seconds == 10  # the charge 50 s ago leaves the window in 10 s


def test_charges_older_than_a_minute_do_not_count() -> None:
    old = [NOW - timedelta(seconds=60)] * 5
    assert check_quota(now=NOW, month_used=5, recent_charges=old) is None


def test_monthly_quota_wins_and_suggests_pro() -> None:
    rejection = check_quota(now=NOW, month_used=FREE_PER_MONTH, recent_charges=[])
    assert rejection is not None and rejection.kind == "month"
    assert "monthly enrichment limit" in rejection.message and "Pro" in rejection.message
    assert rejection.retry_after_seconds == int((datetime(2031, 6, 1, tzinfo=UTC) - NOW).total_seconds())


def test_quota_use_reads_the_count_as_the_check_would() -> None:
    # Late on 30 November in New York is already December in UTC: the November count no longer applies.
    now = datetime(2031, 11, 30, 20, 0, tzinfo=timezone(timedelta(hours=-5)))
    stale = quota_use(is_pro=False, now=now, counted_month=datetime(2031, 11, 1).date(), month_used=150)
    assert (stale.used_this_month, stale.remaining_this_month) == (0, FREE_PER_MONTH)
    assert stale.resets_at == datetime(2032, 1, 1, tzinfo=UTC)
    current = quota_use(is_pro=False, now=now, counted_month=month_of(now), month_used=150)
    assert (current.used_this_month, current.remaining_this_month, current.per_minute_limit) == (150, 50, 5)
    over = quota_use(is_pro=False, now=now, counted_month=month_of(now), month_used=FREE_PER_MONTH + 3)
    assert over.remaining_this_month == 0
    pro = quota_use(is_pro=True, now=now, counted_month=None, month_used=0)
    assert (pro.monthly_limit, pro.remaining_this_month, pro.per_minute_limit) == (None, None, None)


def test_retry_schedule() -> None:
    delays = (60.0, 300.0)
    assert retry_delay(attempts=1, retriable=True, delays=delays) == 60.0
    assert retry_delay(attempts=2, retriable=True, delays=delays) == 300.0
    assert retry_delay(attempts=3, retriable=True, delays=delays) is None  # the third failure is final
    assert retry_delay(attempts=1, retriable=False, delays=delays) is None


@pytest.mark.parametrize(
    ("is_html", "html", "text", "rendered", "expected"),
    [
        (False, False, False, False, "skipped"),
        (True, True, True, True, "completed"),
        (True, True, True, False, "ready"),
        (True, True, False, False, "failed"),
        (True, False, False, False, "failed"),
    ],
)
def test_snapshot_status(is_html: bool, html: bool, text: bool, rendered: bool, expected: str) -> None:
    assert snapshot_status(is_html=is_html, html_stored=html, text_stored=text, rendered_stored=rendered) == expected


def test_tags_are_lowercase_unique_and_at_most_eight() -> None:
    assert normalize_tags(["Bread", "bread ", "  Sour   Dough", "", *[f"t{i}" for i in range(10)]]) == [
        "bread",
        "sour dough",
        "t0",
        "t1",
        "t2",
        "t3",
        "t4",
        "t5",
    ]


def test_public_result_gates_save_why() -> None:
    result = {
        "normalizedUrl": "https://a.example/",
        "domain": "a.example",
        "saveWhy": "Because.",
        "tags": ["x"],
        "language": "en",
    }
    assert public_result(result, is_pro=False)["saveWhy"] is None
    pro = public_result(result, is_pro=True)
    assert pro["saveWhy"] == "Because."
    assert "language" not in pro


def test_settings_read_the_documented_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENRICHMENT_RETRY_DELAYS_SECONDS", "0.2, 0.4")
    monkeypatch.setenv("ENRICHMENT_ALLOW_PRIVATE_NETWORKS", "true")
    monkeypatch.setenv("ENRICHMENT_BROWSER", "off")
    monkeypatch.setenv("OPENAI_API_KEY", "")
    monkeypatch.setenv("DATABASE_URL_ENRICHMENT", "postgresql+asyncpg://u@db/enrichment")
    settings = Settings()
    assert settings.retry_delays_seconds == (0.2, 0.4)
    assert settings.max_attempts == 3
    assert settings.allow_private_networks is True
    assert settings.browser == "off"
    assert settings.openai_api_key is None
    assert settings.database_url.endswith("/enrichment")
    assert (settings.host, settings.port, settings.worker_host, settings.worker_port) == (
        "127.0.0.1",
        8083,
        "127.0.0.1",
        8084,
    )
    assert settings.worker_concurrency == 4


def test_defaults_follow_the_configuration_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "ENRICHMENT_RETRY_DELAYS_SECONDS",
        "ENRICHMENT_FETCH_TIMEOUT_SECONDS",
        "ENRICHMENT_CACHE_TTL_SECONDS",
        "ENRICHMENT_ALLOW_PRIVATE_NETWORKS",
        "ENRICHMENT_BROWSER",
    ):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.retry_delays_seconds == (60.0, 300.0)
    assert settings.fetch_timeout_seconds == 10
    assert settings.cache_ttl_seconds == 2_592_000
    assert settings.allow_private_networks is False
    assert settings.browser == "auto"


def test_worker_crashes_are_bounded_apart_from_site_attempts() -> None:
    from enrichment.domain.model import crashes_exhausted, retry_delay
    from enrichment.service import ClaimedJob

    assert not crashes_exhausted(crashes=3, max_crashes=5)
    assert crashes_exhausted(crashes=5, max_crashes=5)
    # the 4th claim after 3 crashes is still the site's first attempt: its failure is retried
    job = ClaimedJob(id=uuid.uuid4(), url="u", normalized_url="u", attempts=4, existing_tags=[], crashes=3)
    assert job.site_attempt == 1
    assert retry_delay(attempts=job.site_attempt, retriable=True, delays=(60.0, 300.0)) == 60.0
