"""Bench-only launcher: a service process with one speed-only construct patched out.

    python bench/speed_variants.py <service> <variant>

``<service>`` is ``bookmarks`` or ``gateway``; ``<variant>`` is ``base`` (the code as shipped),
``control`` (the same again: the noise floor) or one of :data:`VARIANTS`. The patch is applied in this
process before the service module is imported or its app built, then the service's own
``__main__.main()`` serves it with its usual settings (environment). No production setting or code path
knows about these variants: they exist only here, for ``bench/speed_code.py``. Every bookmarks variant
also leaves the event consumers to the stack's own bookmarks process (:func:`_serve_requests_only`).

  fast_path        bookmarks: no ``BookmarkWriteFastPath``; PUT and DELETE go through FastAPI's route
  gate             bookmarks: sessions without the FIFO gate (plain ``async_sessionmaker``)
  server           bookmarks or gateway: plain ``uvicorn.Server`` (10 housekeeping ticks a second) instead
                   of ``QuietServer``; the start-up heap is still frozen once started
  stored_docs      bookmarks: delta pages render each bookmark's document from its columns instead of
                   reading the stored ``wire_document``
  proxy_fast_path  gateway: no ``ProxyFastPath``; proxied requests go through FastAPI's routes
  upstream         gateway: proxied requests over an ``httpx.AsyncClient`` instead of ``UpstreamPool``
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def _replace(owner: Any, name: str, value: Any) -> None:
    """``owner.name = value``, refusing a name that is not there: a renamed construct must fail the
    bench, not leave the variant measuring the shipped code."""
    if not hasattr(owner, name):
        raise SystemExit(f"{owner!r} has no {name}: bench/speed_variants.py is out of date")
    setattr(owner, name, value)


def _no_fast_path() -> None:
    import bookmarks.main

    _replace(bookmarks.main, "install_write_fast_path", lambda routes: None)


def _no_gate() -> None:
    from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

    import common.db as db

    def plain(engine: Any, *, concurrency: int = 0) -> Any:
        return async_sessionmaker(engine, class_=AsyncSession, expire_on_commit=False)

    _replace(db, "create_session_factory", plain)


def _plain_server() -> None:
    import uvicorn

    import common.server as server

    class PlainServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            server.freeze_startup_heap()

    _replace(server, "QuietServer", PlainServer)


def _documents_from_columns() -> None:
    import dataclasses

    from sqlalchemy import Text, case, literal, null

    import bookmarks.api.wire as wire
    import bookmarks.sync.routes as sync_routes

    def bookmark(table: Any, is_pro: Any) -> Any:
        stored = wire._sql_members((name, table.c[attr], kind) for name, attr, kind in wire._STORED_FIELDS)
        gated = case((is_pro, table.c.save_why), else_=null())
        save_why = wire._sql_members([(wire._GATED, gated, "plain")], first=False)
        return wire._concat([*stored, *save_why, literal("}", Text())])

    documents = dataclasses.replace(sync_routes.DELTA_DOCUMENTS, bookmark=bookmark)
    _replace(sync_routes, "DELTA_DOCUMENTS", documents)


def _no_proxy_fast_path() -> None:
    import gateway.main

    _replace(gateway.main, "install_proxy_fast_path", lambda routes: None)


def _httpx_upstream() -> None:
    from httpx_pool import HttpxPool  # bench/httpx_pool.py

    import gateway.proxy

    _replace(gateway.proxy, "UpstreamPool", HttpxPool)


VARIANTS: dict[str, tuple[str, Callable[[], None]]] = {
    "fast_path": ("bookmarks", _no_fast_path),
    "gate": ("bookmarks", _no_gate),
    "server": ("*", _plain_server),
    "stored_docs": ("bookmarks", _documents_from_columns),
    "proxy_fast_path": ("gateway", _no_proxy_fast_path),
    "upstream": ("gateway", _httpx_upstream),
}


def _serve_requests_only() -> None:
    """Every bookmarks variant (``base`` too) leaves the event consumers to the stack's own bookmarks
    process, as it leaves it the outbox relay (whose lock that process holds): which process of a
    consumer group gets the partitions is chance, and their work would land on one variant's figures."""
    import bookmarks.main

    _replace(bookmarks.main, "HANDLERS", {})


def main() -> None:
    service, variant = sys.argv[1], sys.argv[2]
    if variant not in ("base", "control"):  # first: some patches must precede the service's imports
        owner, patch = VARIANTS[variant]
        if owner not in ("*", service):
            raise SystemExit(f"{variant} is a {owner} variant")
        patch()
    if service == "bookmarks":
        _serve_requests_only()
    importlib.import_module(f"{service}.__main__").main()


if __name__ == "__main__":
    main()
