"""The canonical URL the platform keeps: the page's own claim, normalized, on the saved URL's site only."""

import socket
from typing import Any

import pytest
from tld.utils import reset_tld_names

from common.canonical import registrable_domain, same_site_canonical


@pytest.mark.parametrize(
    ("saved", "declared", "kept"),
    [
        # An AMP copy names its article.
        (
            "https://news.example.com/amp/story/1",
            "https://news.example.com/story/1",
            "https://news.example.com/story/1",
        ),
        ("https://amp.news.example.co.uk/s/1", "https://www.news.example.co.uk/s/1", "https://news.example.co.uk/s/1"),
        # A mobile subdomain names the www page (kept in normalized form: no www., no tracking).
        ("https://m.example.com/a", "https://www.example.com/a?utm_source=m", "https://example.com/a"),
        # A tracking variant names the clean address.
        ("https://example.com/a?utm_source=x&fbclid=1", "HTTPS://EXAMPLE.COM/a#top", "https://example.com/a"),
        # The page confirms its own address: kept.
        ("https://example.com/a", "https://example.com/a", "https://example.com/a"),
        # Sites under a suffix the list does not know (the list's default rule), IP addresses.
        ("https://amp.news.example/article", "https://news.example/article", "https://news.example/article"),
        ("http://127.0.0.1:8000/x", "http://127.0.0.1:8000/y", "http://127.0.0.1:8000/y"),
        ("http://[::1]/x", "http://[0:0::1]/y", "http://[::1]/y"),
    ],
)
def test_a_same_site_canonical_is_kept_normalized(saved: str, declared: str, kept: str) -> None:
    assert same_site_canonical(saved, declared) == kept


@pytest.mark.parametrize(
    ("saved", "declared"),
    [
        # Another site naming someone's article (the hostile page), also by a look-alike suffix.
        ("https://evil.example/copy", "https://news.example/article"),
        ("https://evil.example.net/copy", "https://news.example.com/article"),
        ("https://news.example.com.evil.example/a", "https://news.example.com/a"),
        ("https://example.co.uk/a", "https://other.co.uk/a"),
        # Two users' sites under a shared (private) suffix are two sites.
        ("https://alice.github.io/post", "https://bob.github.io/post"),
        ("https://alice.blogspot.com/post", "https://bob.blogspot.com/post"),
        # A public suffix itself has no site to share.
        ("https://github.io/", "https://github.io/x"),
        ("http://127.0.0.1/x", "http://127.0.0.2/x"),
        # Nothing named, or nothing usable.
        ("https://example.com/a", None),
        ("https://example.com/a", ""),
        ("https://example.com/a", "/relative/path"),
        ("https://example.com/a", "javascript:alert(1)"),
        ("https://example.com/a", "ftp://example.com/a"),
        ("https://example.com/a", "https://exa mple.com/a"),
        ("https://example.com/a", "https://[::1/a"),
        ("https://example.com/a", "https://example.com:99999/a"),
        ("https://example.com/a", "https://example.com/" + "a" * 2100),
        ("https://localhost/a", "https://localhost/b"),
    ],
)
def test_a_canonical_on_another_site_or_no_http_url_is_refused(saved: str, declared: str | None) -> None:
    assert same_site_canonical(saved, declared) is None


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("example.com", "example.com"),
        ("a.b.example.com", "example.com"),
        ("news.example.co.uk", "example.co.uk"),
        ("a.b.user.github.io", "user.github.io"),
        ("www.xn--e1afmkfd.xn--p1ai", "xn--e1afmkfd.xn--p1ai"),
        ("amp.news.example", "news.example"),
        ("10.0.0.1", "10.0.0.1"),
        ("[2001:db8::1]", "[2001:db8::1]"),
        ("co.uk", None),
        ("localhost", None),
    ],
)
def test_registrable_domain(host: str, site: str | None) -> None:
    assert registrable_domain(host) == site


def test_the_suffix_list_is_read_from_the_package_never_downloaded(monkeypatch: Any) -> None:
    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the suffix list must not be fetched")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    reset_tld_names()  # loaded again, from the package's file
    assert registrable_domain("amp.news.example.co.uk") == "example.co.uk"
