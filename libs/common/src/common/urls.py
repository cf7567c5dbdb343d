"""URL validation and normalization (docs/api-guide.md, section 7), shared by bookmarks and enrichment.

The normalized URL is the identity of a page across users (results cache, duplicate detection),
so both services must call the same function and get byte-identical results.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Final
from urllib.parse import SplitResult, unquote, urlsplit

import idna

__all__ = ["MAX_URL_LENGTH", "InvalidUrlError", "NormalizedUrl", "normalize_url", "validate_http_url"]

MAX_URL_LENGTH: Final = 2048

_ALLOWED_SCHEMES: Final = frozenset({"http", "https"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

_TRACKING_PARAMS: Final = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "mc_cid",
        "mc_eid",
        "igshid",
        "yclid",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
        "ref_src",
    }
)
# `si` is a share-tracking id only on these services; elsewhere it may be a real parameter.
_SI_HOSTS: Final = ("youtube.com", "youtu.be", "spotify.com")

# WHATWG "forbidden domain code points" that can survive urlsplit's netloc extraction.
_FORBIDDEN_HOST_CHARS: Final = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|]")
# Browsers silently drop these anywhere in a URL; a pasted URL often carries a stray newline.
_REMOVED_CHARS: Final = str.maketrans("", "", "\t\n\r")
_C0_OR_SPACE: Final = "".join(chr(c) for c in range(0x21))
_CONTROL_CHARS: Final = re.compile(r"[\x00-\x1f\x7f]")


class InvalidUrlError(ValueError):
    """The URL cannot be stored or fetched; the message is fit to show to a user."""


@dataclass(frozen=True, slots=True)
class NormalizedUrl:
    url: str
    domain: str


def validate_http_url(url: str) -> None:
    """Raise InvalidUrlError unless ``url`` is an absolute http(s) URL with a host, within the length limit."""
    normalize_url(url)


def normalize_url(url: str) -> NormalizedUrl:
    """Normalize ``url`` per docs/api-guide.md, section 7; raise InvalidUrlError when it is not a usable http(s) URL.

    Beyond that section: userinfo (``user:password@``) is dropped, because a normalized URL is stored, shared
    across users as a cache key and shown in clients, and must never carry credentials. A trailing dot
    on the host is removed, IPv6 hosts are written in canonical compressed form inside brackets, and a
    leading ``www.`` is kept when removing it would leave a single label (``www.com`` stays). Path and
    query keep their exact percent-encoding; only tracking parameters (and empty ``&&`` segments)
    are removed from the query.
    """
    if len(url) > MAX_URL_LENGTH:
        raise InvalidUrlError(f"URL is longer than {MAX_URL_LENGTH} characters.")
    cleaned = url.translate(_REMOVED_CHARS).strip(_C0_OR_SPACE)
    if _CONTROL_CHARS.search(cleaned):
        raise InvalidUrlError("URL contains control characters.")
    try:
        parts = urlsplit(cleaned)
    except ValueError as exc:
        raise InvalidUrlError(f"URL cannot be parsed: {exc}.") from None

    scheme = parts.scheme.lower()
    if scheme not in _ALLOWED_SCHEMES:
        raise InvalidUrlError("URL must start with http:// or https://.")

    host, port = _split_netloc(parts)
    if port is not None and port == _DEFAULT_PORTS[scheme]:
        port = None

    path = parts.path or "/"
    query = _strip_tracking(parts.query, host=host)
    authority = host if port is None else f"{host}:{port}"
    normalized = f"{scheme}://{authority}{path}"
    if query:
        normalized += f"?{query}"
    return NormalizedUrl(url=normalized, domain=host)


def _split_netloc(parts: SplitResult) -> tuple[str, int | None]:
    # Parsed by hand: SplitResult.hostname/.port raise late, accept odd ports and lowercase
    # without IDNA, and we need the exact WHATWG-like behaviour in one place.
    hostport = parts.netloc.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end == -1:
            raise InvalidUrlError("URL has an unterminated IPv6 address.")
        host = _normalize_ipv6(hostport[1:end])
        rest = hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidUrlError("URL has characters after the IPv6 address.")
        raw_port = rest[1:] if rest else ""
    else:
        raw_host, _, raw_port = hostport.partition(":")
        host = _normalize_domain(raw_host)
    return host, _parse_port(raw_port)


def _parse_port(raw_port: str) -> int | None:
    if raw_port == "":
        return None
    if not raw_port.isascii() or not raw_port.isdigit() or int(raw_port) > 65535:
        raise InvalidUrlError(f"URL has an invalid port {raw_port!r}.")
    return int(raw_port)


def _normalize_ipv6(literal: str) -> str:
    try:
        address = ipaddress.IPv6Address(literal)
    except ValueError:
        raise InvalidUrlError(f"URL has an invalid IPv6 address {literal!r}.") from None
    if address.scope_id is not None:
        raise InvalidUrlError("URL must not carry an IPv6 zone identifier.")
    return f"[{address.compressed}]"


def _normalize_domain(raw_host: str) -> str:
    try:
        host = unquote(raw_host, errors="strict") if "%" in raw_host else raw_host
    except UnicodeDecodeError:
        raise InvalidUrlError(f"URL host {raw_host!r} is not valid percent-encoded UTF-8.") from None
    host = host.removesuffix(".")
    if not host:
        raise InvalidUrlError("URL has no host.")
    if _FORBIDDEN_HOST_CHARS.search(host):
        raise InvalidUrlError(f"URL host {raw_host!r} contains characters not allowed in a host name.")
    host = _to_ascii(host)
    if len(host) > 253:
        raise InvalidUrlError("URL host is longer than 253 characters.")
    if host.startswith("www.") and "." in host[4:]:
        host = host[4:]
    return host


# A host that IDNA leaves as it is, lowercased: ASCII letters, digits and hyphens, labels of 1-63 that
# neither start nor end with a hyphen nor have one at both their third and fourth place (xn--, and the
# other reserved "??--" forms, go to the idna package).
_PLAIN_LABEL: Final = r"(?!..--)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_PLAIN_HOST: Final = re.compile(rf"{_PLAIN_LABEL}(?:\.{_PLAIN_LABEL})*")


def _to_ascii(host: str) -> str:
    """The host's ASCII (A-label) form. Most hosts are plain ASCII names that IDNA only lowercases: those
    skip the idna package, whose checks were 3 % of the bookmarks process per write; a unit
    test holds the shortcut equal to the package on every host it takes."""
    if host.isascii() and _PLAIN_HOST.fullmatch(lowered := host.lower()):
        return lowered
    return _idna_to_ascii(host)


def _idna_to_ascii(host: str) -> str:
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except UnicodeError:
        pass
    # Strict IDNA 2008 rejects names that browsers and DNS accept (underscores, leading hyphens,
    # symbols such as ☃). Map like UTS 46, then convert label by label with the IDNA 2003 codec as a fallback.
    try:
        mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    except UnicodeError:
        raise InvalidUrlError(f"URL host {host!r} is not a valid domain name.") from None
    return ".".join(_label_to_ascii(label, host=host) for label in mapped.split("."))


def _label_to_ascii(label: str, *, host: str) -> str:
    if label.isascii():
        ascii_label = label.lower()
    else:
        try:
            ascii_label = idna.alabel(label).decode("ascii")
        except UnicodeError:
            try:
                ascii_label = label.encode("idna").decode("ascii")
            except UnicodeError:
                raise InvalidUrlError(f"URL host {host!r} is not a valid domain name.") from None
    if not 0 < len(ascii_label) <= 63 or _FORBIDDEN_HOST_CHARS.search(ascii_label):
        raise InvalidUrlError(f"URL host {host!r} is not a valid domain name.")
    return ascii_label


def _strip_tracking(query: str, *, host: str) -> str:
    if not query:
        return ""
    drop_si = any(host == suffix or host.endswith(f".{suffix}") for suffix in _SI_HOSTS)
    kept = []
    for segment in query.split("&"):
        if not segment:
            continue
        name = unquote(segment.partition("=")[0].replace("+", " ")).lower()
        if name.startswith("utm_") or name in _TRACKING_PARAMS or (drop_si and name == "si"):
            continue
        kept.append(segment)
    return "&".join(kept)
