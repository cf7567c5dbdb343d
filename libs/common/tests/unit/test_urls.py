import random
from typing import Any

import pytest

from common import urls
from common.urls import InvalidUrlError, NormalizedUrl, normalize_url, validate_http_url

# (input, normalized url, domain)
NORMALIZED = [
    # scheme and host case
    ("HTTP://EXAMPLE.COM/Path", "http://example.com/Path", "example.com"),
    ("HtTpS://Example.Com/", "https://example.com/", "example.com"),
    # www.
    ("https://www.example.com/a", "https://example.com/a", "example.com"),
    ("https://WWW.Example.com/a", "https://example.com/a", "example.com"),
    ("https://www2.example.com/", "https://www2.example.com/", "www2.example.com"),
    ("https://sub.www.example.com/", "https://sub.www.example.com/", "sub.www.example.com"),
    ("https://www.com/", "https://www.com/", "www.com"),
    # ports
    ("http://example.com:80/", "http://example.com/", "example.com"),
    ("https://example.com:443/", "https://example.com/", "example.com"),
    ("http://example.com:443/", "http://example.com:443/", "example.com"),
    ("https://example.com:80/", "https://example.com:80/", "example.com"),
    ("http://example.com:8080/x", "http://example.com:8080/x", "example.com"),
    ("http://example.com:/x", "http://example.com/x", "example.com"),
    ("http://example.com:0080/", "http://example.com/", "example.com"),
    # empty path, fragment
    ("https://example.com", "https://example.com/", "example.com"),
    ("https://example.com#top", "https://example.com/", "example.com"),
    ("https://example.com/a/b#section-2", "https://example.com/a/b", "example.com"),
    ("https://example.com?q=1", "https://example.com/?q=1", "example.com"),
    # tracking parameters
    ("https://example.com/?utm_source=x&utm_medium=y", "https://example.com/", "example.com"),
    ("https://example.com/?UTM_Source=x&Utm_Campaign=y&a=1", "https://example.com/?a=1", "example.com"),
    ("https://example.com/?utm_whatever_new=1&b=2", "https://example.com/?b=2", "example.com"),
    ("https://example.com/?a=1&fbclid=abc&b=2", "https://example.com/?a=1&b=2", "example.com"),
    (
        "https://example.com/?gclid=1&dclid=2&gbraid=3&wbraid=4&msclkid=5&keep=1",
        "https://example.com/?keep=1",
        "example.com",
    ),
    (
        "https://example.com/?mc_cid=1&mc_eid=2&igshid=3&yclid=4&keep=yes",
        "https://example.com/?keep=yes",
        "example.com",
    ),
    (
        "https://example.com/?_hsenc=1&_hsmi=2&mkt_tok=3&ref_src=twsrc&z=9",
        "https://example.com/?z=9",
        "example.com",
    ),
    ("https://example.com/?utm_source=x#frag", "https://example.com/", "example.com"),
    ("https://example.com/path?utm_source=x", "https://example.com/path", "example.com"),
    ("https://example.com/?", "https://example.com/", "example.com"),
    ("https://example.com/?a=1&&b=2&", "https://example.com/?a=1&b=2", "example.com"),
    # order and exact encoding of the remaining parameters
    ("https://example.com/?z=1&a=2&m=3", "https://example.com/?z=1&a=2&m=3", "example.com"),
    ("https://example.com/?a=&b&utm_id=1", "https://example.com/?a=&b", "example.com"),
    ("https://example.com/?q=a%20b+c&x=%2F", "https://example.com/?q=a%20b+c&x=%2F", "example.com"),
    ("https://example.com/?q=caf%C3%A9&fbclid=1", "https://example.com/?q=caf%C3%A9", "example.com"),
    ("https://example.com/?utm%5Fsource=1&a=1", "https://example.com/?a=1", "example.com"),
    ("https://example.com/?a=1&a=2&a=1", "https://example.com/?a=1&a=2&a=1", "example.com"),
    # si: only on youtube/spotify hosts
    ("https://youtu.be/abc?si=XYZ", "https://youtu.be/abc", "youtu.be"),
    ("https://www.youtube.com/watch?v=1&si=XYZ&t=5", "https://youtube.com/watch?v=1&t=5", "youtube.com"),
    ("https://music.youtube.com/watch?v=1&si=x", "https://music.youtube.com/watch?v=1", "music.youtube.com"),
    ("https://m.youtube.com/watch?si=x&v=1", "https://m.youtube.com/watch?v=1", "m.youtube.com"),
    ("https://open.spotify.com/track/1?si=abc", "https://open.spotify.com/track/1", "open.spotify.com"),
    ("https://spotify.com/?si=abc", "https://spotify.com/", "spotify.com"),
    ("https://example.com/?si=abc", "https://example.com/?si=abc", "example.com"),
    ("https://notyoutube.com/?si=abc", "https://notyoutube.com/?si=abc", "notyoutube.com"),
    # path encoding is left alone
    ("https://example.com/a%2Fb/%7Euser/", "https://example.com/a%2Fb/%7Euser/", "example.com"),
    ("https://example.com/A/./b/../C", "https://example.com/A/./b/../C", "example.com"),
    # IDN
    ("https://bücher.de/", "https://xn--bcher-kva.de/", "xn--bcher-kva.de"),
    ("https://BÜCHER.de/", "https://xn--bcher-kva.de/", "xn--bcher-kva.de"),
    ("https://www.müller.example/", "https://xn--mller-kva.example/", "xn--mller-kva.example"),
    ("https://xn--bcher-kva.de/", "https://xn--bcher-kva.de/", "xn--bcher-kva.de"),
    ("https://例え.jp/", "https://xn--r8jz45g.jp/", "xn--r8jz45g.jp"),
    ("https://example。com/", "https://example.com/", "example.com"),
    ("https://☃.net/", "https://xn--n3h.net/", "xn--n3h.net"),
    # names strict IDNA 2008 rejects but DNS accepts
    ("https://my_host.example.com/", "https://my_host.example.com/", "my_host.example.com"),
    ("https://My_Host.Example.com/", "https://my_host.example.com/", "my_host.example.com"),
    # trailing dot, userinfo
    ("https://example.com./", "https://example.com/", "example.com"),
    ("https://user:secret@example.com/a", "https://example.com/a", "example.com"),
    ("https://user@www.example.com:443/", "https://example.com/", "example.com"),
    # IP hosts
    ("http://[::1]/", "http://[::1]/", "[::1]"),
    ("http://[2001:DB8:0:0::1]:8080/x", "http://[2001:db8::1]:8080/x", "[2001:db8::1]"),
    ("http://[::1]:80/", "http://[::1]/", "[::1]"),
    ("http://192.168.0.1:8080/", "http://192.168.0.1:8080/", "192.168.0.1"),
    # surrounding whitespace and stray newlines
    ("  https://example.com/a\n", "https://example.com/a", "example.com"),
    ("https://exa\nmple.com/", "https://example.com/", "example.com"),
    ("https://ex%61mple.com/", "https://example.com/", "example.com"),
]

INVALID = [
    "",
    "   ",
    "ftp://example.com/file",
    "javascript:alert(1)",
    "mailto:someone@example.com",
    "data:text/html,<h1>hi</h1>",
    "file:///etc/passwd",
    "http://",
    "https://",
    "http:///path",
    "http:/example.com",
    "//example.com/path",
    "example.com",
    "not a url",
    "::::",
    "http://exa mple.com/",
    "http://[::1/",
    "http://[not-ipv6]/",
    "http://[fe80::1%25eth0]/",
    "http://example.com:99999/",
    "http://example.com:8o/",
    "http://user@/",
    "http://a..b.com/",
    "http://" + "a" * 64 + ".com/",
    "http://%ff.com/",
    "http://exa\x00mple.com/",
    "https://example.com/" + "a" * 2048,
]


@pytest.mark.parametrize(("raw", "url", "domain"), NORMALIZED)
def test_normalize(raw: str, url: str, domain: str) -> None:
    assert normalize_url(raw) == NormalizedUrl(url=url, domain=domain)


@pytest.mark.parametrize(("raw", "url", "domain"), NORMALIZED)
def test_normalize_is_idempotent(raw: str, url: str, domain: str) -> None:
    assert normalize_url(url) == NormalizedUrl(url=url, domain=domain)


@pytest.mark.parametrize("raw", INVALID)
def test_invalid(raw: str) -> None:
    with pytest.raises(InvalidUrlError) as excinfo:
        normalize_url(raw)
    assert str(excinfo.value)
    with pytest.raises(InvalidUrlError):
        validate_http_url(raw)


def test_invalid_url_error_is_value_error() -> None:
    assert issubclass(InvalidUrlError, ValueError)


def test_length_limit_is_inclusive() -> None:
    prefix = "https://example.com/"
    at_limit = prefix + "a" * (2048 - len(prefix))
    assert normalize_url(at_limit).url == at_limit
    with pytest.raises(InvalidUrlError, match="2048"):
        normalize_url(at_limit + "a")


def test_validate_accepts_valid_url() -> None:
    validate_http_url("https://example.com/?utm_source=x")


# --- the plain-host shortcut of _to_ascii ------------------------------------------------------


def _outcome(convert: Any, host: str) -> str:
    try:
        return str(convert(host))
    except InvalidUrlError:
        return "InvalidUrlError"


PLAIN_EDGES = [
    "example.com",
    "EXAMPLE.Com",
    "s12.example",
    "1.2.3.4",
    "a",
    "a-b.c",
    "a--b.com",
    "ab--c.com",
    "xn--bcher-kva.example",
    "XN--BCHER-KVA.example",
    "xn--zz.example",
    "ab-.com",
    "-ab.com",
    "a_b.com",
    "a..b",
    ".",
    "a." + "b" * 63,
    "a." + "b" * 64,
    ".".join(["a" * 63] * 4),
    ".".join(["a" * 63] * 5),
    "www.example.com",
    "-",
    "a-",
    "0-0.0",
    "x" * 64,
]


@pytest.mark.parametrize("host", PLAIN_EDGES)
def test_the_plain_host_shortcut_agrees_with_idna_on_edge_cases(host: str) -> None:
    assert _outcome(urls._to_ascii, host) == _outcome(urls._idna_to_ascii, host)


def test_the_plain_host_shortcut_agrees_with_idna_on_random_ascii_hosts() -> None:
    rng = random.Random(15)
    alphabet = "abcxyzABZ0189-._"
    taken = 0
    for _ in range(20_000):
        lengths = [rng.choice([1, 2, 3, 4, 5, 8, 63, 64]) for _ in range(rng.randint(1, 4))]
        host = ".".join("".join(rng.choices(alphabet, k=n)) for n in lengths)
        taken += urls._PLAIN_HOST.fullmatch(host.lower()) is not None
        assert _outcome(urls._to_ascii, host) == _outcome(urls._idna_to_ascii, host), host
    assert taken > 2_000  # the shortcut is exercised, not only the fallback
