"""SafeFetcher against a real HTTP server on 127.0.0.1.

The server is on loopback, which the default policy blocks; tests that need an answer either allow
private networks or inject a policy that lets exactly 127.0.0.1 through.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from enrichment.fetch import (
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
    IPAddress,
    SafeFetcher,
    check_url_allowed,
    is_blocked_address,
)

SIX_MIB = 6 * 1024 * 1024
LOOPBACK = ipaddress.IPv4Address("127.0.0.1")

RUSSIAN = (
    "Москва — столица России, крупнейший по численности населения город страны. Город расположен "
    "на реке Москве в центре Восточно-Европейской равнины. Это политический, экономический и культурный центр."
)
JAPANESE = (
    "東京は日本の首都であり、世界有数の大都市です。多くの人々が毎日電車で通勤しています。"
    "美しい公園や歴史的な寺院もたくさんあります。"
)
FRENCH = "Ça coûte très cher à Zürich, l'hôtel était élégant et la crème brûlée délicieuse."


def html(text: str, *, head: str = "") -> str:
    return f"<!doctype html><html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


# --- the server ----------------------------------------------------------------------------------


@dataclass
class Server:
    port: int
    scheme: str = "http"
    canary_hits: list[str] = field(default_factory=list)

    def url(self, path: str, *, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


def build_app(state: Server) -> Starlette:
    async def page(request: Request) -> Response:
        return Response(html("Hello"), headers={"content-type": "text/html; charset=utf-8"})

    async def canary(request: Request) -> Response:
        state.canary_hits.append(request.url.path)
        return PlainTextResponse("reached")

    async def echo_host(request: Request) -> Response:
        return PlainTextResponse(request.headers.get("host", ""))

    async def echo_headers(request: Request) -> Response:
        lines = [f"{name}: {value}" for name, value in request.headers.items()]
        return PlainTextResponse("\n".join(lines))

    async def set_cookie(request: Request) -> Response:
        response = PlainTextResponse("cookie set")
        response.set_cookie("session", "secret")
        return response

    async def big(request: Request) -> Response:
        return Response(b"a" * SIX_MIB, headers={"content-type": "text/html"})

    async def big_chunked(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(SIX_MIB // 65536 + 1):
                yield b"a" * 65536

        return StreamingResponse(chunks(), headers={"content-type": "text/plain"})

    async def under_limit(request: Request) -> Response:
        return Response(b"b" * (1024 * 1024), headers={"content-type": "text/plain"})

    async def image(request: Request) -> Response:
        return Response(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, headers={"content-type": "image/png"})

    async def slow(request: Request) -> Response:
        await asyncio.sleep(3)
        return Response(html("late"), headers={"content-type": "text/html"})

    async def drip(request: Request) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(100):
                yield b"<p>drip</p>"
                await asyncio.sleep(0.1)

        return StreamingResponse(chunks(), headers={"content-type": "text/html"})

    async def status(request: Request) -> Response:
        return PlainTextResponse("status", status_code=int(request.path_params["code"]))

    async def redirect(request: Request) -> Response:
        remaining = int(request.path_params["n"])
        if remaining == 0:
            return Response(html("end of chain"), headers={"content-type": "text/html"})
        return RedirectResponse(f"/redirect/{remaining - 1}", status_code=302)

    async def redirect_to(request: Request) -> Response:
        return RedirectResponse(request.query_params["to"], status_code=int(request.query_params.get("s", 302)))

    async def charset(request: Request) -> Response:
        variant = request.path_params["variant"]
        body, content_type = CHARSET_PAGES[variant]
        headers = {"content-type": content_type} if content_type else {}
        return Response(body, headers=headers)

    return Starlette(
        routes=[
            Route("/page", page),
            Route("/canary", canary),
            Route("/canary/{rest:path}", canary),
            Route("/echo-host", echo_host),
            Route("/echo-headers", echo_headers),
            Route("/set-cookie", set_cookie),
            Route("/big", big),
            Route("/big-chunked", big_chunked),
            Route("/under-limit", under_limit),
            Route("/image", image),
            Route("/slow", slow),
            Route("/drip", drip),
            Route("/status/{code:int}", status),
            Route("/redirect/{n:int}", redirect),
            Route("/rel/a/b", lambda request: RedirectResponse("../target?x=1", status_code=301)),
            Route("/rel/target", page),
            Route("/redirect-to", redirect_to),
            Route("/charset/{variant}", charset),
        ]
    )


CHARSET_PAGES: dict[str, tuple[bytes, str | None]] = {
    "latin1-header": (html(FRENCH).encode("iso-8859-1"), "text/html; charset=ISO-8859-1"),
    "latin1-meta": (html(FRENCH, head='<meta charset="iso-8859-1">').encode("iso-8859-1"), "text/html"),
    "sjis-header": (html(JAPANESE).encode("shift_jis"), "text/html; charset=Shift_JIS"),
    "sjis-meta": (
        html(JAPANESE, head='<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">').encode(
            "shift_jis"
        ),
        "text/html",
    ),
    "sjis-undeclared": (html(JAPANESE).encode("shift_jis"), "text/html"),
    "cp1251-header": (html(RUSSIAN).encode("windows-1251"), 'text/html; charset="windows-1251"'),
    "cp1251-meta": (html(RUSSIAN, head="<meta charset=windows-1251>").encode("windows-1251"), "text/html"),
    "cp1251-undeclared": (html(RUSSIAN).encode("windows-1251"), "text/html"),
    "cp1251-wrong-header": (html(RUSSIAN).encode("windows-1251"), "text/html; charset=utf-8"),
    "plain-1251": (RUSSIAN.encode("windows-1251"), "text/plain; charset=windows-1251"),
    "utf8-bom": (b"\xef\xbb\xbf" + html(RUSSIAN).encode("utf-8"), "text/html; charset=windows-1251"),
    "no-content-type": (html("sniffed").encode("utf-8"), None),
}


def run_server(*, certfile: str | None = None, keyfile: str | None = None) -> Iterator[Server]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    state = Server(port=sock.getsockname()[1], scheme="https" if certfile else "http")
    config = uvicorn.Config(
        build_app(state),
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=1,
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
    )
    uvicorn_server = uvicorn.Server(config)
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not uvicorn_server.started:
        if not thread.is_alive():
            raise RuntimeError("test server failed to start")
        time.sleep(0.01)
    yield state
    uvicorn_server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from run_server()


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    cert_file: Path
    key_file: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A private CA and a certificate valid only for the name tls.test."""
    directory = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fetch test CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tls.test")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("tls.test")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(ca_file=directory / "ca.pem", cert_file=directory / "cert.pem", key_file=directory / "key.pem")
    pki.ca_file.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    pki.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return pki


@pytest.fixture(scope="module")
def tls_server(pki: Pki) -> Iterator[Server]:
    yield from run_server(certfile=str(pki.cert_file), keyfile=str(pki.key_file))


# --- helpers -------------------------------------------------------------------------------------


class mapping_resolver:  # noqa: N801 -- reads as a function at call sites
    """A resolver that knows only ``table`` and records the names it was asked for."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


def only_loopback_allowed(ip: IPAddress) -> bool:
    return ip != LOOPBACK and is_blocked_address(ip)


@pytest.fixture
async def open_fetcher() -> AsyncIterator[SafeFetcher]:
    """A fetcher that may reach the loopback test server."""
    async with SafeFetcher(timeout_seconds=10, user_agent="test-fetcher/1.0", allow_private_networks=True) as f:
        yield f


@pytest.fixture
async def strict_fetcher() -> AsyncIterator[SafeFetcher]:
    """A fetcher with the production policy and a resolver that knows no names."""
    async with SafeFetcher(timeout_seconds=10, user_agent="test-fetcher/1.0", resolver=mapping_resolver({})) as f:
        yield f


async def fetch_error(fetcher: SafeFetcher, url: str) -> FetchError:
    with pytest.raises(FetchError) as excinfo:
        await fetcher.fetch(url)
    return excinfo.value


# --- blocking ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.0.1/",
        "http://169.254.169.254/latest/meta-data",
        "http://100.64.0.1/",
        "http://0.0.0.0/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://127.1/",
        "https://0xa9fea9fe/latest/meta-data",
    ],
)
async def test_private_literals_are_refused(strict_fetcher: SafeFetcher, url: str) -> None:
    error = await fetch_error(strict_fetcher, url)
    assert error.code == BLOCKED_HOST
    assert not error.retriable


async def test_loopback_server_is_refused_without_a_request(strict_fetcher: SafeFetcher, server: Server) -> None:
    for host in ("127.0.0.1", "2130706433", "0x7f.1", "017700000001", "[::ffff:127.0.0.1]"):
        error = await fetch_error(strict_fetcher, server.url("/canary/literal", host=host))
        assert error.code == BLOCKED_HOST
    assert server.canary_hits == []


async def test_localhost_through_the_system_resolver_is_refused(server: Server) -> None:
    async with SafeFetcher(timeout_seconds=10, user_agent="t") as fetcher:
        error = await fetch_error(fetcher, server.url("/canary/localhost", host="localhost"))
    assert error.code == BLOCKED_HOST
    assert server.canary_hits == []


@pytest.mark.parametrize(
    "addresses",
    [
        ["10.0.0.5"],
        ["93.184.216.34", "10.0.0.5"],
        ["10.0.0.5", "93.184.216.34"],
        ["93.184.216.34", "fd00::5"],
        ["2606:4700::1111", "::1"],
        ["169.254.169.254"],
        ["::ffff:10.0.0.5"],
    ],
)
async def test_hostname_resolving_to_a_private_address_is_refused(addresses: list[str]) -> None:
    resolver = mapping_resolver({"evil.test": addresses})
    async with SafeFetcher(timeout_seconds=10, user_agent="t", resolver=resolver) as fetcher:
        error = await fetch_error(fetcher, "https://evil.test/")
    assert error.code == BLOCKED_HOST
    assert resolver.calls == ["evil.test"]


async def test_redirect_to_a_private_address_is_refused_before_connecting(server: Server) -> None:
    checked: list[IPAddress] = []

    def policy(ip: IPAddress) -> bool:
        checked.append(ip)
        return only_loopback_allowed(ip)

    resolver = mapping_resolver({"public.test": ["127.0.0.1"]})
    async with SafeFetcher(timeout_seconds=10, user_agent="t", resolver=resolver, address_policy=policy) as f:
        page = await f.fetch(server.url("/page", host="public.test"))
        assert page.status == 200

        error = await fetch_error(f, server.url("/redirect-to?to=http://10.0.0.7/", host="public.test"))
        assert error.code == BLOCKED_HOST
        assert checked[-1] == ipaddress.ip_address("10.0.0.7")

        rebinding = server.url("/redirect-to?to=http://rebind.test:{port}/canary/rebind", host="public.test")
        error = await fetch_error(f, rebinding.replace("{port}", str(server.port)))
        assert error.code == DNS_FAILURE  # every hop is resolved again, and rebind.test is unknown

    assert server.canary_hits == []


async def test_redirect_hop_to_a_name_resolving_privately_is_refused(server: Server) -> None:
    resolver = mapping_resolver({"public.test": ["127.0.0.1"], "internal.test": ["127.0.0.1", "10.9.9.9"]})
    async with SafeFetcher(
        timeout_seconds=10, user_agent="t", resolver=resolver, address_policy=only_loopback_allowed
    ) as f:
        target = f"http://internal.test:{server.port}/canary/hop"
        error = await fetch_error(f, server.url(f"/redirect-to?to={target}", host="public.test"))
    assert error.code == BLOCKED_HOST
    assert resolver.calls == ["public.test", "internal.test"]
    assert server.canary_hits == []


async def test_check_url_allowed() -> None:
    resolver = mapping_resolver({"public.test": ["93.184.216.34"], "private.test": ["192.168.4.4"]})
    await check_url_allowed("https://public.test/x", allow_private_networks=False, resolver=resolver)
    await check_url_allowed("http://private.test/", allow_private_networks=True, resolver=resolver)
    await check_url_allowed("http://127.0.0.1/", allow_private_networks=True)
    cases = [
        ("http://private.test/", BLOCKED_HOST),
        ("http://169.254.169.254/", BLOCKED_HOST),
        ("http://0x7f.1/", BLOCKED_HOST),
        ("http://unknown.test/", DNS_FAILURE),
        ("ftp://public.test/", INVALID_URL),
        ("javascript:alert(1)", INVALID_URL),
    ]
    for url, code in cases:
        with pytest.raises(FetchError) as excinfo:
            await check_url_allowed(url, allow_private_networks=False, resolver=resolver)
        assert excinfo.value.code == code, url


# --- invalid URLs, DNS and connection failures ---------------------------------------------------


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "javascript:alert(1)", "file:///etc/passwd", "http://", "not a url", "http://[::1"]
)
async def test_invalid_urls(strict_fetcher: SafeFetcher, url: str) -> None:
    error = await fetch_error(strict_fetcher, url)
    assert error.code == INVALID_URL
    assert not error.retriable


async def test_unknown_host_is_a_retriable_dns_failure(strict_fetcher: SafeFetcher) -> None:
    error = await fetch_error(strict_fetcher, "https://does-not-exist.test/")
    assert error.code == DNS_FAILURE
    assert error.retriable


async def test_refused_connection_is_a_retriable_upstream_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    async with SafeFetcher(timeout_seconds=10, user_agent="t", allow_private_networks=True) as f:
        error = await fetch_error(f, f"http://127.0.0.1:{closed_port}/")
    assert error.code == UPSTREAM_5XX
    assert error.retriable


# --- pinning -------------------------------------------------------------------------------------


async def test_connection_is_pinned_and_sends_the_original_host(server: Server) -> None:
    # echo.test exists only in our resolver: reaching the server at all proves we connected to the IP.
    resolver = mapping_resolver({"echo.test": ["127.0.0.1"]})
    async with SafeFetcher(
        timeout_seconds=10, user_agent="t", resolver=resolver, address_policy=only_loopback_allowed
    ) as f:
        page = await f.fetch(server.url("/echo-host", host="echo.test"))
    assert page.text == f"echo.test:{server.port}"
    assert page.final_url == server.url("/echo-host", host="echo.test")
    assert resolver.calls == ["echo.test"]


async def test_next_checked_address_is_tried_when_one_refuses(server: Server) -> None:
    # Nothing listens on 127.0.0.2 (the server is bound to 127.0.0.1 only).
    resolver = mapping_resolver({"multi.test": ["127.0.0.2", "127.0.0.1"]})
    async with SafeFetcher(timeout_seconds=10, user_agent="t", resolver=resolver, allow_private_networks=True) as f:
        page = await f.fetch(server.url("/echo-host", host="multi.test"))
    assert page.text == f"multi.test:{server.port}"


async def test_tls_verifies_the_hostname_while_connecting_to_the_pinned_address(pki: Pki, tls_server: Server) -> None:
    resolver = mapping_resolver({"tls.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    async with SafeFetcher(
        timeout_seconds=10,
        user_agent="t",
        resolver=resolver,
        address_policy=only_loopback_allowed,
        ssl_context=context,
    ) as f:
        page = await f.fetch(tls_server.url("/echo-host", host="tls.test"))
        assert page.text == f"tls.test:{tls_server.port}"
        # Same address, same pool, but the certificate does not cover this name: the check must fail
        # rather than reuse the tls.test connection.
        error = await fetch_error(f, tls_server.url("/canary/other", host="other.test"))
        assert error.code == UPSTREAM_5XX
        assert "certificate" in str(error.__cause__).lower()
        # And the IP itself is not a name on the certificate either.
        error = await fetch_error(f, tls_server.url("/canary/ip"))
        assert error.code == UPSTREAM_5XX
        assert "certificate" in str(error.__cause__).lower()
    assert tls_server.canary_hits == []


async def test_request_headers_carry_no_credentials_or_cookies(open_fetcher: SafeFetcher, server: Server) -> None:
    await open_fetcher.fetch(server.url("/set-cookie"))
    page = await open_fetcher.fetch(f"http://user:secret@127.0.0.1:{server.port}/echo-headers")
    headers = page.text.lower()
    assert "user-agent: test-fetcher/1.0" in headers
    assert "authorization" not in headers
    assert "cookie" not in headers


# --- responses -----------------------------------------------------------------------------------


async def test_successful_fetch(open_fetcher: SafeFetcher, server: Server) -> None:
    page = await open_fetcher.fetch(server.url("/page#fragment"))
    assert page.status == 200
    assert page.content_type == "text/html"
    assert page.charset == "utf-8"
    assert "<title>t</title>" in page.text
    assert page.body == page.text.encode("utf-8")
    assert page.headers["Content-Type"] == "text/html; charset=utf-8"
    assert page.redirect_chain == ()
    assert page.final_url == server.url("/page")


async def test_body_under_the_limit_is_read(open_fetcher: SafeFetcher, server: Server) -> None:
    page = await open_fetcher.fetch(server.url("/under-limit"))
    assert len(page.body) == 1024 * 1024
    assert page.content_type == "text/plain"


@pytest.mark.parametrize("path", ["/big", "/big-chunked"])
async def test_oversized_body_is_refused(open_fetcher: SafeFetcher, server: Server, path: str) -> None:
    error = await fetch_error(open_fetcher, server.url(path))
    assert error.code == TOO_LARGE
    assert not error.retriable


async def test_body_limit_is_configurable(server: Server) -> None:
    async with SafeFetcher(timeout_seconds=10, user_agent="t", allow_private_networks=True, max_body_bytes=1000) as f:
        assert len((await f.fetch(server.url("/page"))).body) < 1000
        error = await fetch_error(f, server.url("/under-limit"))
    assert error.code == TOO_LARGE


async def test_wrong_content_type_is_refused(open_fetcher: SafeFetcher, server: Server) -> None:
    error = await fetch_error(open_fetcher, server.url("/image"))
    assert error.code == UNSUPPORTED_CONTENT
    assert not error.retriable


async def test_missing_content_type_is_sniffed(open_fetcher: SafeFetcher, server: Server) -> None:
    page = await open_fetcher.fetch(server.url("/charset/no-content-type"))
    assert page.content_type == "text/html"
    assert "sniffed" in page.text


@pytest.mark.parametrize(
    ("code", "error_code", "retriable"),
    [
        (404, UPSTREAM_4XX, False),
        (410, UPSTREAM_4XX, False),
        (403, UPSTREAM_4XX, False),
        (429, UPSTREAM_RATE_LIMITED, True),
        (500, UPSTREAM_5XX, True),
        (503, UPSTREAM_5XX, True),
    ],
)
async def test_status_mapping(
    open_fetcher: SafeFetcher, server: Server, code: int, error_code: str, retriable: bool
) -> None:
    error = await fetch_error(open_fetcher, server.url(f"/status/{code}"))
    assert error.code == error_code
    assert error.retriable is retriable


async def test_slow_response_times_out(server: Server) -> None:
    async with SafeFetcher(timeout_seconds=0.5, user_agent="t", allow_private_networks=True) as f:
        error = await fetch_error(f, server.url("/slow"))
    assert error.code == FETCH_TIMEOUT
    assert error.retriable


async def test_slow_drip_body_times_out(server: Server) -> None:
    # Each chunk arrives well within the read timeout; only the overall deadline can stop this.
    async with SafeFetcher(timeout_seconds=0.5, user_agent="t", allow_private_networks=True) as f:
        error = await fetch_error(f, server.url("/drip"))
    assert error.code == FETCH_TIMEOUT


# --- redirects -----------------------------------------------------------------------------------


async def test_five_redirects_are_followed(open_fetcher: SafeFetcher, server: Server) -> None:
    page = await open_fetcher.fetch(server.url("/redirect/5"))
    assert "end of chain" in page.text
    assert page.final_url == server.url("/redirect/0")
    assert page.redirect_chain == tuple(server.url(f"/redirect/{n}") for n in range(5, 0, -1))


async def test_six_redirects_are_too_many(open_fetcher: SafeFetcher, server: Server) -> None:
    error = await fetch_error(open_fetcher, server.url("/redirect/6"))
    assert error.code == UPSTREAM_4XX
    assert not error.retriable


async def test_redirect_limit_is_configurable(server: Server) -> None:
    async with SafeFetcher(timeout_seconds=10, user_agent="t", allow_private_networks=True, max_redirects=1) as f:
        assert (await f.fetch(server.url("/redirect/1"))).final_url == server.url("/redirect/0")
        assert (await fetch_error(f, server.url("/redirect/2"))).code == UPSTREAM_4XX


async def test_relative_redirect_is_followed(open_fetcher: SafeFetcher, server: Server) -> None:
    page = await open_fetcher.fetch(server.url("/rel/a/b"))
    assert page.final_url == server.url("/rel/target?x=1")
    assert page.redirect_chain == (server.url("/rel/a/b"),)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirect_statuses(open_fetcher: SafeFetcher, server: Server, status: int) -> None:
    page = await open_fetcher.fetch(server.url(f"/redirect-to?to=/page&s={status}"))
    assert page.final_url == server.url("/page")


@pytest.mark.parametrize("location", ["ftp://example.com/file", "javascript:alert(1)", "http://[::1"])
async def test_redirect_to_a_bad_location_is_an_invalid_url(
    open_fetcher: SafeFetcher, server: Server, location: str
) -> None:
    error = await fetch_error(open_fetcher, server.url("/redirect-to") + "?to=" + location)
    assert error.code == INVALID_URL


# --- decoding ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "expected", "content_type"),
    [
        ("latin1-header", FRENCH, "text/html"),
        ("latin1-meta", FRENCH, "text/html"),
        ("sjis-header", JAPANESE, "text/html"),
        ("sjis-meta", JAPANESE, "text/html"),
        ("sjis-undeclared", JAPANESE, "text/html"),
        ("cp1251-header", RUSSIAN, "text/html"),
        ("cp1251-meta", RUSSIAN, "text/html"),
        ("cp1251-undeclared", RUSSIAN, "text/html"),
        ("cp1251-wrong-header", RUSSIAN, "text/html"),
        ("plain-1251", RUSSIAN, "text/plain"),
        ("utf8-bom", RUSSIAN, "text/html"),
    ],
)
async def test_non_utf8_pages_are_decoded(
    open_fetcher: SafeFetcher, server: Server, variant: str, expected: str, content_type: str
) -> None:
    page = await open_fetcher.fetch(server.url(f"/charset/{variant}"))
    assert expected in page.text
    assert page.content_type == content_type
    assert page.body == CHARSET_PAGES[variant][0]
