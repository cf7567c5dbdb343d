"""Compressed answers from a real HTTP server on 127.0.0.1.

Bombs are built here by streaming compression (never held uncompressed); memory is checked with
tracemalloc's peak of Python allocations (every decoded byte is one), and the loop's responsiveness by
counting the turns a concurrent task gets: no clocks.
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator

import brotli
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from devstack.testing import serve_app
from enrichment.fetch import TOO_LARGE, UNSUPPORTED_CONTENT, FetchError, SafeFetcher

MIB = 1024 * 1024
CAP = 5 * MIB
PAGE = b"<!doctype html><html><head><title>t</title></head><body>" + b"<p>hello</p>" * 2000 + b"</body></html>"


def zeros_gzipped(total: int, *, layers: int) -> bytes:
    compressors = [zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS) for _ in range(layers)]

    def through(data: bytes, *, final: bool) -> bytes:
        for compressor in compressors:
            data = compressor.compress(data) + (compressor.flush() if final else b"")
        return data

    parts = [through(bytes(MIB), final=False) for _ in range(total // MIB)]
    parts.append(through(b"", final=True))
    return b"".join(parts)


def zeros_brotli(total: int) -> bytes:
    compressor = brotli.Compressor(quality=5)
    parts = [compressor.process(bytes(MIB)) for _ in range(total // MIB)]
    parts.append(compressor.finish())
    return b"".join(parts)


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {
        "single": zeros_gzipped(256 * MIB, layers=1),
        "double": zeros_gzipped(512 * MIB, layers=2),
        "brotli": zeros_brotli(256 * MIB),
    }


def build_app(bombs: dict[str, bytes]) -> Starlette:
    def html(body: bytes, *encodings: str) -> Response:
        response = Response(body, headers={"content-type": "text/html; charset=utf-8"})
        for encoding in encodings:
            response.raw_headers.append((b"content-encoding", encoding.encode()))
        return response

    async def gzip_bomb(_: Request) -> Response:
        return html(bombs["single"], "gzip")

    async def stacked_bomb(_: Request) -> Response:
        return html(bombs["double"], "gzip, gzip")

    async def stacked_bomb_two_lines(_: Request) -> Response:
        return html(bombs["double"], "gzip", "gzip")

    async def brotli_bomb(_: Request) -> Response:
        return html(bombs["brotli"], "br")

    async def brotli_page(_: Request) -> Response:
        return html(brotli.compress(PAGE), "br")

    async def gzip_page(_: Request) -> Response:
        return html(gzip.compress(PAGE), "gzip")

    async def deflate_page(_: Request) -> Response:
        return html(zlib.compress(PAGE), "deflate")

    async def unknown(request: Request) -> Response:
        return html(PAGE, request.path_params["encoding"])

    async def accept_encoding(request: Request) -> Response:
        return PlainTextResponse(request.headers.get("accept-encoding", ""))

    return Starlette(
        routes=[
            Route("/bomb", gzip_bomb),
            Route("/brotli-bomb", brotli_bomb),
            Route("/br", brotli_page),
            Route("/stacked", stacked_bomb),
            Route("/stacked-two-lines", stacked_bomb_two_lines),
            Route("/gzip", gzip_page),
            Route("/deflate", deflate_page),
            Route("/encoded/{encoding}", unknown),
            Route("/accept-encoding", accept_encoding),
        ]
    )


@pytest.fixture
async def base(bombs: dict[str, bytes]) -> AsyncIterator[str]:
    async with serve_app(build_app(bombs)) as url:
        yield url


@pytest.fixture
async def fetcher() -> AsyncIterator[SafeFetcher]:
    async with SafeFetcher(timeout_seconds=30, user_agent="test-fetcher/1.0", allow_private_networks=True) as f:
        yield f


async def fetch_error(fetcher: SafeFetcher, url: str) -> FetchError:
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(url)
    return caught.value


async def test_a_gzip_bomb_stops_at_the_cap_without_inflating_in_memory(fetcher: SafeFetcher, base: str) -> None:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        error = await fetch_error(fetcher, f"{base}/bomb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.code == TOO_LARGE and not error.retriable
    # The page stops at 5 MiB decoded; the old code inflated 64 MiB per network read.
    assert peak < CAP + 24 * MIB, peak


async def test_a_brotli_bomb_stops_at_the_cap_without_inflating_in_memory(fetcher: SafeFetcher, base: str) -> None:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        error = await fetch_error(fetcher, f"{base}/brotli-bomb")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.code == TOO_LARGE and not error.retriable
    assert peak < CAP + 24 * MIB, peak


@pytest.mark.parametrize("path", ["/stacked", "/stacked-two-lines"])
async def test_stacked_encodings_are_refused_before_decoding(fetcher: SafeFetcher, base: str, path: str) -> None:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        error = await fetch_error(fetcher, base + path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert error.code == UNSUPPORTED_CONTENT and not error.retriable
    assert "Stacked" in error.message
    assert peak < 24 * MIB, peak


@pytest.mark.parametrize("encoding", ["zstd", "compress", "bogus"])
async def test_unknown_encodings_are_refused(fetcher: SafeFetcher, base: str, encoding: str) -> None:
    error = await fetch_error(fetcher, f"{base}/encoded/{encoding}")
    assert error.code == UNSUPPORTED_CONTENT and not error.retriable


@pytest.mark.parametrize("path", ["/gzip", "/deflate", "/br", "/encoded/identity"])
async def test_supported_encodings_are_decoded(fetcher: SafeFetcher, base: str, path: str) -> None:
    page = await fetcher.fetch(base + path)
    assert page.body == PAGE and page.text == PAGE.decode()


async def test_only_decodable_encodings_are_requested(fetcher: SafeFetcher, base: str) -> None:
    page = await fetcher.fetch(f"{base}/accept-encoding")
    assert page.text == "gzip, deflate, br"


async def test_the_loop_gets_turns_while_a_bomb_is_decoded(fetcher: SafeFetcher, base: str) -> None:
    turns = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal turns
        while not done.is_set():
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    try:
        error = await fetch_error(fetcher, f"{base}/bomb")
    finally:
        done.set()
        await task
    assert error.code == TOO_LARGE
    # At least one turn per 64 KiB piece decoded up to the cap.
    assert turns >= CAP // (64 * 1024), turns
