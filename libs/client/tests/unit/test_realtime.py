"""Events URL, nudge recognition and sync coalescing."""

from __future__ import annotations

import asyncio

import pytest

from bookmark_client.realtime import Coalescer, events_url, is_nudge


def test_events_url() -> None:
    assert events_url("http://127.0.0.1:8080", "a.b+c") == "ws://127.0.0.1:8080/v1/events?access_token=a.b%2Bc"
    assert events_url("https://api.example.com/prefix/", "t") == "wss://api.example.com/prefix/v1/events?access_token=t"
    with pytest.raises(ValueError):
        events_url("ftp://x", "t")


def test_is_nudge() -> None:
    assert is_nudge('{"type": "bookmarks_changed"}')
    assert is_nudge(b'{"type":"bookmarks_changed","extra":1}')
    assert not is_nudge('{"type": "other"}')
    assert not is_nudge("not json")
    assert not is_nudge("[1, 2]")


async def test_requests_during_a_run_collapse_into_exactly_one_more() -> None:
    release = asyncio.Event()
    started = asyncio.Queue[int]()
    runs = 0

    async def job() -> None:
        nonlocal runs
        runs += 1
        started.put_nowait(runs)
        await release.wait()

    coalescer = Coalescer(job)
    coalescer.request()
    assert await started.get() == 1
    for _ in range(10):  # a burst of nudges while the first sync runs
        coalescer.request()
    release.set()
    await coalescer.wait_idle()
    assert runs == 2
    assert not coalescer.running

    coalescer.request()  # idle again: a new request starts a new run
    await coalescer.wait_idle()
    assert runs == 3


async def test_a_failing_job_does_not_stop_later_runs() -> None:
    calls = 0

    async def job() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("boom")

    coalescer = Coalescer(job)
    coalescer.request()
    await coalescer.wait_idle()
    coalescer.request()
    await coalescer.wait_idle()
    assert calls == 2


async def test_aclose_cancels_a_running_job() -> None:
    never = asyncio.Event()
    coalescer = Coalescer(never.wait)  # type: ignore[arg-type]
    coalescer.request()
    await asyncio.sleep(0)
    await coalescer.aclose()
    assert not coalescer.running
