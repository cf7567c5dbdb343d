"""SSRF-safe page fetcher (docs/api-guide.md, section 6).

Every hop (the first request and each redirect) is parsed, its host resolved once, every resolved
address checked, and the TCP connection then opened to one of exactly those checked addresses: the
hostname is never handed to a resolver a second time, so DNS rebinding has no gap to use.

Pinning happens in the network backend rather than by rewriting the request URL to the IP: the
connection pool is keyed by hostname, so a keep-alive connection opened for one name (and verified
against that name's certificate) is never reused for another name that shares the IP — CDNs answer
such mismatched SNI/Host requests with 421, and it would skip certificate checks for the second name.
The request keeps the original hostname, which gives the right Host header, SNI and certificate check.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import http.cookiejar
import ipaddress
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, TracebackType
from typing import Final, Self

import charset_normalizer
import httpcore
import httpx
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from enrichment.domain.links import Hop, ProbeFailure
from enrichment.fetch.addresses import IPAddress, is_blocked_address, parse_host_literal
from enrichment.fetch.decoding import ACCEPT_ENCODING, DEFAULT_STEP_BYTES, BoundedDecoder
from enrichment.fetch.errors import (
    BLOCKED_HOST,
    DNS_FAILURE,
    FETCH_TIMEOUT,
    INVALID_URL,
    TOO_LARGE,
    UNSUPPORTED_CONTENT,
    UPSTREAM_4XX,
    UPSTREAM_5XX,
    UPSTREAM_RATE_LIMITED,
    FetchError,
)

__all__ = [
    "AddressPolicy",
    "FetchedImage",
    "FetchedPage",
    "Probe",
    "Resolver",
    "SafeFetcher",
    "check_url_allowed",
    "default_resolver",
]

Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Async ``(host, port) -> IP address strings``; raises ``socket.gaierror`` when the name does not resolve."""

AddressPolicy = Callable[[IPAddress], bool]
"""Returns True when the address must not be connected to."""

DEFAULT_MAX_BODY_BYTES: Final = 5 * 1024 * 1024
DEFAULT_MAX_REDIRECTS: Final = 5

ANALYSED_CONTENT_TYPES: Final = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_ACCEPT: Final = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"
# A probe's ranged GET asks for the first KiB and reads at most this much of whatever comes.
PROBE_RANGE: Final = "bytes=0-1023"
PROBE_MAX_BODY_BYTES: Final = 4096
_PROBE_FAILURES: Final[Mapping[str, ProbeFailure]] = MappingProxyType(
    {DNS_FAILURE: "dns", FETCH_TIMEOUT: "timeout", BLOCKED_HOST: "blocked-address", INVALID_URL: "invalid-url"}
)
# SVG is XML that can carry script; a thumbnail is only ever a raster image.
_SCRIPTABLE_IMAGE_TYPES: Final = frozenset({"image/svg+xml"})

_tracer = trace.get_tracer("enrichment.fetch")

# Host -> addresses checked for the hop in flight; read by the network backend when it connects.
_pinned_addresses: contextvars.ContextVar[Mapping[str, tuple[str, ...]]] = contextvars.ContextVar(
    "pinned_addresses", default=MappingProxyType({})
)


@dataclass(frozen=True, slots=True)
class FetchedPage:
    final_url: str
    status: int
    content_type: str
    """Media type without parameters, lowercased, e.g. ``text/html``."""
    charset: str
    """Python codec name that ``text`` was decoded with."""
    body: bytes
    text: str
    headers: Mapping[str, str]
    """Response headers of the final hop (case-insensitive lookup)."""
    redirect_chain: tuple[str, ...]
    """URLs that answered with a redirect, in order; empty when the first URL answered."""


@dataclass(frozen=True, slots=True)
class FetchedImage:
    final_url: str
    content_type: str
    """Media type without parameters, lowercased, e.g. ``image/png``."""
    body: bytes


@dataclass(frozen=True, slots=True)
class Probe:
    """What :meth:`SafeFetcher.probe` saw: every answer in order (redirects with their absolute location),
    and ``failure`` when the chain ended without a final answer. ``headers`` and ``body_start`` are the
    final answer's (``body_start``: at most PROBE_MAX_BODY_BYTES, empty after a HEAD)."""

    hops: tuple[Hop, ...]
    failure: ProbeFailure | None = None
    detail: str = ""
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    body_start: bytes = b""


@dataclass(frozen=True, slots=True)
class _Wanted:
    """What a fetch accepts: the media types, the body cap, and whether an untyped answer is sniffed.

    ``head_only`` reads at most ``max_bytes`` and stops at the end of the HTML head: a longer body is
    cut there rather than refused.
    """

    accepts: Callable[[str], bool]
    max_bytes: int
    sniff: bool
    head_only: bool = False


@dataclass(frozen=True, slots=True)
class _RawPage:
    final_url: str
    status: int
    media_type: str
    declared_charset: str | None
    body: bytes
    headers: Mapping[str, str]
    redirect_chain: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Target:
    url: httpx.URL
    host: str
    addresses: tuple[str, ...]


async def default_resolver(host: str, port: int) -> list[str]:
    """Resolve A and AAAA records through the system resolver, without duplicates."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def check_url_allowed(
    url: str,
    *,
    allow_private_networks: bool,
    resolver: Resolver | None = None,
    address_policy: AddressPolicy = is_blocked_address,
) -> None:
    """Raise FetchError (invalid-url, dns-failure or blocked-host) unless ``url`` may be fetched now.

    For filters that cannot pin the connection themselves (the headless browser's sub-requests).
    """
    await _resolve_target(
        url,
        resolver=resolver or default_resolver,
        address_policy=None if allow_private_networks else address_policy,
    )


class SafeFetcher:
    """Fetches one page with SSRF protection, size and time limits; one connection pool per instance."""

    def __init__(
        self,
        *,
        timeout_seconds: float,
        user_agent: str,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        allow_private_networks: bool = False,
        resolver: Resolver | None = None,
        address_policy: AddressPolicy = is_blocked_address,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``ssl_context`` replaces the default (certifi roots), for private CAs and tests."""
        self._timeout_seconds = timeout_seconds
        self._max_body_bytes = max_body_bytes
        self._max_redirects = max_redirects
        self._resolver = resolver or default_resolver
        self._address_policy = None if allow_private_networks else address_policy
        self._client = httpx.AsyncClient(
            transport=_PinnedTransport(ssl_context or httpx.create_ssl_context(trust_env=False)),
            timeout=httpx.Timeout(timeout_seconds),
            follow_redirects=False,
            # Environment proxies would connect to the hostname behind our back; netrc could leak credentials.
            trust_env=False,
            # Cookies from one user's fetch must never ride along on another's.
            cookies=http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
            # Only what BoundedDecoder can undo within the size cap (httpx would add br/zstd when installed).
            headers={"User-Agent": user_agent, "Accept": _ACCEPT, "Accept-Encoding": ACCEPT_ENCODING},
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(self, url: str) -> FetchedPage:
        """Fetch ``url`` following up to ``max_redirects`` redirects; raise FetchError on any failure."""
        wanted = _Wanted(ANALYSED_CONTENT_TYPES.__contains__, self._max_body_bytes, True)
        return await self._fetch_page(url, wanted, self._timeout_seconds)

    async def fetch_head(self, url: str, *, max_bytes: int, timeout_seconds: float) -> FetchedPage:
        """Fetch the start of an HTML page: at most ``max_bytes`` decoded, up to the end of its ``<head>``.

        The same address checks, redirect re-checks and content types as :meth:`fetch`, under its own
        deadline; a page longer than the cap is cut, not refused.
        """
        wanted = _Wanted(_HTML_TYPES.__contains__, min(max_bytes, self._max_body_bytes), True, head_only=True)
        return await self._fetch_page(url, wanted, timeout_seconds)

    async def _fetch_page(self, url: str, wanted: _Wanted, timeout_seconds: float) -> FetchedPage:
        try:
            # One deadline for the whole attempt: per-read timeouts alone never fire on a slow drip.
            async with asyncio.timeout(timeout_seconds):
                raw = await self._fetch(url, wanted)
        except TimeoutError:
            raise FetchError(
                FETCH_TIMEOUT, f"Fetching the page took longer than {timeout_seconds:g} seconds."
            ) from None
        # Charset detection on a few MiB is CPU work: keep it off the event loop and outside the deadline.
        charset, text = await asyncio.to_thread(
            decode_body, raw.body, declared_charset=raw.declared_charset, html=raw.media_type in _HTML_TYPES
        )
        return FetchedPage(
            final_url=raw.final_url,
            status=raw.status,
            content_type=raw.media_type,
            charset=charset,
            body=raw.body,
            text=text,
            headers=raw.headers,
            redirect_chain=raw.redirect_chain,
        )

    async def fetch_image(self, url: str, *, max_bytes: int) -> FetchedImage:
        """Fetch a raster image (``image/*`` except SVG) of at most ``max_bytes``; raise FetchError otherwise.

        The same address checks, redirect re-checks and deadline as :meth:`fetch`.
        """
        wanted = _Wanted(_is_raster_image, min(max_bytes, self._max_body_bytes), False)
        try:
            async with asyncio.timeout(self._timeout_seconds):
                raw = await self._fetch(url, wanted)
        except TimeoutError:
            raise FetchError(
                FETCH_TIMEOUT, f"Fetching the image took longer than {self._timeout_seconds:g} seconds."
            ) from None
        return FetchedImage(final_url=raw.final_url, content_type=raw.media_type, body=raw.body)

    async def probe(self, url: str, *, timeout_seconds: float, max_redirects: int | None = None) -> Probe:
        """Ask whether ``url`` answers, without reading it: ``HEAD``, and when that answers 4xx or 5xx
        (except 429) one ``GET`` of ``Range: bytes=0-1023`` of which at most PROBE_MAX_BODY_BYTES are read.

        Redirects are not followed blindly: each hop is reported (so a 301 is told from a 302), and each
        gets the address checks of :meth:`fetch`. A redirect back into the chain ends it as a loop; more
        than ``max_redirects`` as too many. Never raises FetchError: failures are in the result.
        """
        limit = self._max_redirects if max_redirects is None else max_redirects
        hops: list[Hop] = []
        seen = {url}
        current = url
        try:
            async with asyncio.timeout(timeout_seconds):
                for hop in range(limit + 1):
                    target = await _resolve_target(
                        current, resolver=self._resolver, address_policy=self._address_policy
                    )
                    status, location, headers, body = await self._probe_hop(target)
                    if location is None:
                        hops.append(Hop(str(target.url), status))
                        return Probe(tuple(hops), headers=headers, body_start=body)
                    following = _join_location(target.url, location)
                    hops.append(Hop(str(target.url), status, following))
                    if following in seen:
                        return Probe(tuple(hops), "redirect-loop", f"{following} redirects back into the chain.")
                    if hop == limit:
                        break
                    seen.add(following)
                    current = following
        except TimeoutError:
            return Probe(tuple(hops), "timeout", f"No answer within {timeout_seconds:g} seconds.")
        except FetchError as exc:
            return Probe(tuple(hops), _PROBE_FAILURES.get(exc.code, "connection"), exc.message)
        return Probe(tuple(hops), "too-many-redirects", f"More than {limit} redirects.")

    async def _probe_hop(self, target: _Target) -> tuple[int, str | None, Mapping[str, str], bytes]:
        """One hop of a probe: (status, redirect location, headers, start of the body)."""
        with _tracer.start_as_current_span("HEAD", kind=SpanKind.CLIENT) as span:
            span.set_attribute("http.request.method", "HEAD")
            span.set_attribute("server.address", target.host)
            async with self._open(target, "HEAD") as response:
                span.set_attribute("http.response.status_code", response.status_code)
                status, location, headers = response.status_code, _redirect_location(response), response.headers
        if status < 400 or status == 429:
            return status, location, headers, b""
        # Refused (405, 501) or failing: many servers answer HEAD worse than GET, so a small GET decides.
        with _tracer.start_as_current_span("GET", kind=SpanKind.CLIENT) as span:
            span.set_attribute("http.request.method", "GET")
            span.set_attribute("server.address", target.host)
            async with self._open(target, "GET", {"Range": PROBE_RANGE, "Accept-Encoding": "identity"}) as response:
                span.set_attribute("http.response.status_code", response.status_code)
                body = await _read_at_most(response, PROBE_MAX_BODY_BYTES)
                return response.status_code, _redirect_location(response), response.headers, body

    async def _fetch(self, url: str, wanted: _Wanted) -> _RawPage:
        redirect_chain: list[str] = []
        current = url
        for hop in range(self._max_redirects + 1):
            target = await _resolve_target(current, resolver=self._resolver, address_policy=self._address_policy)
            # One CLIENT span per request (hop); the host only, never the URL (it may carry a token).
            with _tracer.start_as_current_span("GET", kind=SpanKind.CLIENT) as span:
                span.set_attribute("http.request.method", "GET")
                span.set_attribute("server.address", target.host)
                async with self._open(target) as response:
                    span.set_attribute("http.response.status_code", response.status_code)
                    location = _redirect_location(response)
                    if location is None:
                        return await self._read_page(target, response, tuple(redirect_chain), wanted)
            if hop == self._max_redirects:
                raise FetchError(UPSTREAM_4XX, f"The page redirected more than {self._max_redirects} times.")
            redirect_chain.append(str(target.url))
            current = _join_location(target.url, location)
        raise AssertionError("unreachable: the loop returns or raises")

    @contextlib.asynccontextmanager
    async def _open(
        self, target: _Target, method: str = "GET", headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        request = self._client.build_request(method, target.url, headers=headers)
        token = _pinned_addresses.set({target.host: target.addresses})
        try:
            with _translate_transport_errors():
                response = await self._client.send(request, stream=True)
        finally:
            _pinned_addresses.reset(token)
        try:
            yield response
        finally:
            await response.aclose()

    async def _read_page(
        self, target: _Target, response: httpx.Response, redirect_chain: tuple[str, ...], wanted: _Wanted
    ) -> _RawPage:
        _raise_for_status(response)
        media_type, declared_charset = _parse_content_type(response.headers.get("content-type"))
        if (media_type or not wanted.sniff) and not wanted.accepts(media_type):
            raise FetchError(UNSUPPORTED_CONTENT, f"Content type {media_type or 'none'} is not accepted.")
        encoding = response.headers.get("content-encoding")
        if wanted.head_only:
            # Pieces are at most one step: the cut at max_bytes comes before the decoder's own limit.
            body = await _read_head(
                response, BoundedDecoder(encoding, limit=wanted.max_bytes + DEFAULT_STEP_BYTES), wanted.max_bytes
            )
        else:
            _check_declared_length(response, wanted.max_bytes)
            body = await _read_body(response, BoundedDecoder(encoding, limit=wanted.max_bytes))
        if not media_type:
            media_type = _sniff_media_type(body)
            if not wanted.accepts(media_type):
                raise FetchError(UNSUPPORTED_CONTENT, f"Content type {media_type} is not accepted.")
        return _RawPage(
            final_url=str(target.url),
            status=response.status_code,
            media_type=media_type,
            declared_charset=declared_charset,
            body=body,
            headers=response.headers,
            redirect_chain=redirect_chain,
        )


def _is_raster_image(media_type: str) -> bool:
    return media_type.startswith("image/") and media_type not in _SCRIPTABLE_IMAGE_TYPES


def _check_declared_length(response: httpx.Response, max_bytes: int) -> None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise FetchError(TOO_LARGE, f"The page is larger than {max_bytes} bytes.")


async def _read_body(response: httpx.Response, decoder: BoundedDecoder) -> bytes:
    """Raw bytes in, decoded within the cap; the loop gets a turn after every bounded piece."""
    chunks: list[bytes] = []
    with _translate_transport_errors():
        async for raw in response.aiter_raw():
            for piece in decoder.feed(raw):
                chunks.append(piece)
                await asyncio.sleep(0)
    for piece in decoder.finish():
        chunks.append(piece)
        await asyncio.sleep(0)
    return b"".join(chunks)


async def _read_at_most(response: httpx.Response, max_bytes: int) -> bytes:
    """The first ``max_bytes`` raw bytes of the body; the rest is never read (the connection is dropped)."""
    body = bytearray()
    with _translate_transport_errors():
        async for raw in response.aiter_raw():
            body += raw
            if len(body) >= max_bytes:
                break
    return bytes(body[:max_bytes])


_HEAD_END: Final = re.compile(rb"</head\s*>|<body[\s>]", re.IGNORECASE)
_HEAD_END_OVERLAP: Final = 16


async def _read_head(response: httpx.Response, decoder: BoundedDecoder, max_bytes: int) -> bytes:
    """Decoded bytes up to the end of the HTML head, at most ``max_bytes``; the rest is never read."""
    body = bytearray()
    with _translate_transport_errors():
        async for raw in response.aiter_raw():
            for piece in decoder.feed(raw):
                searched_from = max(0, len(body) - _HEAD_END_OVERLAP)
                body += piece
                found = _HEAD_END.search(body, searched_from)
                if found is not None:
                    return bytes(body[: found.end()])
                if len(body) >= max_bytes:
                    return bytes(body[:max_bytes])
                await asyncio.sleep(0)
    for piece in decoder.finish():
        body += piece
        if len(body) >= max_bytes:
            break
    return bytes(body[:max_bytes])


async def _resolve_target(url: str, *, resolver: Resolver, address_policy: AddressPolicy | None) -> _Target:
    parsed = _parse_url(url)
    host = parsed.raw_host.decode("ascii")
    literal = parse_host_literal(host)
    if literal is not None:
        addresses: list[IPAddress] = [literal]
    else:
        port = _DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
        addresses = await _resolve(host, port, resolver=resolver)
    if address_policy is not None:
        blocked = [str(address) for address in addresses if address_policy(address)]
        if blocked:
            raise FetchError(
                BLOCKED_HOST, f"{host} resolves to a non-public address ({', '.join(blocked)}); not fetched."
            )
    return _Target(url=parsed, host=host, addresses=tuple(str(address) for address in addresses))


def _parse_url(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise FetchError(INVALID_URL, f"{url!r} is not a valid URL.") from None
    if parsed.scheme not in _DEFAULT_PORTS:
        raise FetchError(INVALID_URL, f"Only http and https URLs are fetched, not {url!r}.")
    if not parsed.raw_host:
        raise FetchError(INVALID_URL, f"{url!r} has no host.")
    # Credentials in a bookmarked URL are not ours to send; fragments never go on the wire.
    return parsed.copy_with(username=None, password=None, fragment=None)


async def _resolve(host: str, port: int, *, resolver: Resolver) -> list[IPAddress]:
    try:
        resolved = await resolver(host, port)
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        raise FetchError(DNS_FAILURE, f"{host} could not be resolved: {exc}.") from None
    addresses: list[IPAddress] = []
    for raw in resolved:
        try:
            addresses.append(ipaddress.ip_address(raw))
        except ValueError:
            raise FetchError(DNS_FAILURE, f"{host} resolved to a malformed address {raw!r}.") from None
    if not addresses:
        raise FetchError(DNS_FAILURE, f"{host} has no addresses.")
    return addresses


def _redirect_location(response: httpx.Response) -> str | None:
    if response.status_code not in _REDIRECT_STATUSES:
        return None
    return response.headers.get("location") or None


def _join_location(base: httpx.URL, location: str) -> str:
    try:
        return str(base.join(location))
    except (httpx.InvalidURL, TypeError, ValueError):
        raise FetchError(INVALID_URL, f"Redirect to an invalid location {location!r}.") from None


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    if status == 429:
        raise FetchError(UPSTREAM_RATE_LIMITED, "The site is rate-limiting requests (HTTP 429).")
    if status >= 500:
        raise FetchError(UPSTREAM_5XX, f"The site answered HTTP {status}.")
    # 4xx, and 1xx/3xx answers that carry no page and no usable redirect.
    raise FetchError(UPSTREAM_4XX, f"The site answered HTTP {status}.")


@contextlib.contextmanager
def _translate_transport_errors() -> Iterator[None]:
    try:
        yield
    except httpx.TimeoutException as exc:
        raise FetchError(FETCH_TIMEOUT, f"The site did not answer in time ({type(exc).__name__}).") from exc
    except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
        raise FetchError(INVALID_URL, str(exc)) from exc
    except httpx.RemoteProtocolError as exc:
        # httpx parses Location even with follow_redirects off, and reports an unparseable one this way.
        if isinstance(exc.__context__, httpx.InvalidURL):
            raise FetchError(INVALID_URL, f"Redirect to an invalid location: {exc.__context__}.") from exc
        raise FetchError(UPSTREAM_5XX, f"The site broke the HTTP protocol: {exc}.") from exc
    except httpx.HTTPError as exc:
        # Refused or reset connections, TLS failures and protocol errors: the site may recover.
        raise FetchError(UPSTREAM_5XX, f"Connection to the site failed: {exc or type(exc).__name__}.") from exc


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to the addresses pinned for the host in the current context, in order."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 -- httpcore.AsyncNetworkBackend signature
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = _pinned_addresses.get().get(host)
        if not addresses:
            # Fail closed: a connection nobody checked must not be opened.
            raise httpcore.ConnectError(f"no checked address pinned for {host}")
        last_error: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 -- httpcore.AsyncNetworkBackend signature
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx offers no hook for the network backend; swapping the pool keeps its request and
        # exception mapping. The attribute has been stable since httpx 0.18.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_PinnedBackend(),
        )


# --- decoding ------------------------------------------------------------------------------------

# WHATWG Encoding Standard: browsers decode these labels with a superset codec, and pages rely on it.
_WHATWG_CODECS: Final = {
    **dict.fromkeys(
        ("ascii", "us-ascii", "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "cp819"),
        "cp1252",
    ),
    **dict.fromkeys(("shift_jis", "shift-jis", "sjis", "x-sjis", "ms_kanji", "csshiftjis", "windows-31j"), "cp932"),
    **dict.fromkeys(("gb2312", "gbk", "x-gbk", "csgb2312", "chinese", "gb_2312-80"), "gb18030"),
    **dict.fromkeys(("euc-kr", "ks_c_5601-1987", "windows-949", "cseuckr"), "cp949"),
    **dict.fromkeys(("iso-8859-9", "latin5", "l5"), "cp1254"),
    **dict.fromkeys(("tis-620", "iso-8859-11"), "cp874"),
}
_BOMS: Final = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
_META_CHARSET: Final = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:+-]+)""", re.IGNORECASE)
_META_PRESCAN_BYTES: Final = 4096
_BINARY_BYTES: Final = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_HTML_SNIFF: Final = re.compile(rb"\s*<(!doctype\s+html|html|head|body|title|meta|!--|script|div|p\b)", re.I)


def decode_body(body: bytes, *, declared_charset: str | None, html: bool) -> tuple[str, str]:
    """Return ``(codec, text)``: BOM, then the declared charset, then ``<meta>``, then detection."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return bom_codec, body[len(bom) :].decode(bom_codec, errors="replace")
    candidates = [_codec_for(declared_charset)]
    if html:
        match = _META_CHARSET.search(body[:_META_PRESCAN_BYTES])
        candidates.append(_codec_for(match.group(1).decode("ascii")) if match else None)
    candidates.append("utf-8")
    for codec in candidates:
        if codec is not None:
            with contextlib.suppress(UnicodeDecodeError, LookupError):
                return codec, body.decode(codec)
    # Nothing declared fits the bytes: the declaration is wrong, so guess from the bytes themselves.
    best = charset_normalizer.from_bytes(body).best()
    if best is not None and best.encoding:
        codec = _codec_for(best.encoding) or best.encoding
        with contextlib.suppress(UnicodeDecodeError, LookupError):
            return codec, body.decode(codec)
        return best.encoding, str(best)
    fallback = next((codec for codec in candidates if codec is not None), "utf-8")
    return fallback, body.decode(fallback, errors="replace")


def _codec_for(label: str | None) -> str | None:
    if not label:
        return None
    cleaned = label.strip().strip("\"'").lower()
    cleaned = _WHATWG_CODECS.get(cleaned, cleaned)
    try:
        info = codecs.lookup(cleaned)
    except LookupError:
        return None
    # Reject bytes-to-bytes codecs ("base64", "zlib") that a hostile header could name.
    return info.name if getattr(info, "_is_text_encoding", True) else None


def _parse_content_type(header: str | None) -> tuple[str, str | None]:
    if not header:
        return "", None
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media_type.strip().lower(), charset


def _sniff_media_type(body: bytes) -> str:
    # Only for answers without Content-Type, following the gist of WHATWG MIME sniffing.
    head = body[:512]
    if _HTML_SNIFF.match(head):
        return "text/html"
    if head and not _BINARY_BYTES.search(head) and not head.startswith(b"%PDF-"):
        return "text/plain"
    raise FetchError(UNSUPPORTED_CONTENT, "The page has no content type and does not look like text.")
