"""A page's canonical URL, as the platform keeps it (docs/api-guide.md, section 14).

A page names its canonical address itself (``<link rel=canonical>``, else ``og:url``), so any page can
claim to be any other. The platform keeps such a claim only when it stays on the saved URL's site: its
registrable domain (the public suffix plus one label: ``example.co.uk`` for ``news.example.co.uk``) must
be the saved URL's. An AMP copy, a mobile subdomain or a tracking variant names its article; a page on
another site that names someone's article is refused. Enrichment applies the rule when it reads the
page, and bookmarks again when it stores the result, so a result never places a bookmark in another
site's duplicates.

The Public Suffix List is the one the ``tld`` package ships: nothing is downloaded at run time.
"""

from __future__ import annotations

import ipaddress
from typing import Final

from tld import get_tld
from tld.utils import Result

from common.urls import InvalidUrlError, normalize_url

__all__ = ["registrable_domain", "same_site_canonical"]

_SCHEME: Final = "https://"


def registrable_domain(host: str) -> str | None:
    """The registrable domain of a normalized host (``amp.news.example.co.uk`` → ``example.co.uk``).

    An IP address is its own; a host under a suffix the list does not know takes the list's default rule
    (its last label is the suffix: ``a.news.example`` → ``news.example``). None for a host that is itself a
    public suffix (``co.uk``, ``github.io``) or a single label: it has no site of its own to share.
    """
    if host.startswith("[") or _is_ipv4(host):
        return host
    found = get_tld(_SCHEME + host, fail_silently=True, as_object=True)
    if isinstance(found, Result):
        site = str(found.fld)
        return site if site != found.tld else None  # the host is a public suffix itself
    labels = host.split(".")
    return ".".join(labels[-2:]) if len(labels) >= 2 and all(labels[-2:]) else None


def same_site_canonical(saved_url: str, declared: str | None) -> str | None:
    """The normalized form of ``declared``, the canonical URL a page names, when it has the registrable
    domain of ``saved_url``; None when the page names none, names no absolute http(s) URL (relative,
    ``javascript:``, malformed) or names one on another site. A canonical equal to the saved URL's
    normalized form is kept too: the page confirms its own address."""
    if not declared:
        return None
    try:
        canonical = normalize_url(declared)
        saved = normalize_url(saved_url)
    except InvalidUrlError:
        return None
    site = registrable_domain(saved.domain)
    if site is None or registrable_domain(canonical.domain) != site:
        return None
    return canonical.url


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True
