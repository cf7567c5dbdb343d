"""Scenario (d): DELETE /v1/account removes the user everywhere, while the shared cache stays.

The token is refused with 401 by every route as soon as the deletion answered (docs/api-guide.md, section 2);
then, once the ``user.deleted`` event has travelled, no row of the user remains in any of the three
service databases. The databases are only read, to prove the outcome (tables and columns are found at
run time, so a table added later is checked too). What may legitimately remain:

- deletion markers that keep late events from resurrecting the user: ``bookmarks.deleted_users`` (id
  and time only) and the enrichment ``users`` projection row with ``deleted = true``;
- the ``outbox`` tables: an event log purged after its retention period, holding among others the
  ``user.deleted`` event itself (keyed by the user id).

The enrichment result of the URL is shared by every user (cache by normalized URL) and must survive.
"""

from __future__ import annotations

from typing import Any

import httpx
from e2e_support import (
    LocalSite,
    anonymous,
    assert_error,
    expect,
    fetch,
    rows_referencing,
    wait_enriched,
    wait_for,
)

SKIPPED_TABLES = frozenset({"outbox"})


def _unexpected(db: str, found: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    leftovers: dict[str, list[dict[str, Any]]] = {}
    for where, rows in found.items():
        table = where.split(".", 1)[0]
        if db == "bookmarks" and table == "deleted_users":
            continue
        if db == "enrichment" and table == "users":
            rows = [r for r in rows if not (r.get("deleted") is True and not r.get("use_ai") and not r.get("is_pro"))]
            if not rows:
                continue
        leftovers[f"{db}.{where}"] = rows
    return leftovers


async def test_account_deletion_refuses_the_token_and_erases_every_row(
    http: httpx.AsyncClient, site: LocalSite, stack: Any
) -> None:
    url = site.add_article("Bread to be forgotten by a deleted account")
    user = await anonymous(http)
    await user.enable_ai()
    saved = await user.put("doomed", {"url": url, "title": "mine", "notes": "private notes"})
    expect(await user.request("PUT", "/v1/bookmarks/doomed/collections", json={"collectionIds": ["c1", "c2"]}), 204)
    await user.put("doomed-too", {"url": "https://example.com/another", "collectionIds": ["c3"]})
    await user.delete("tombstoned")
    expect(await user.enqueue("doomed", url), 202)
    await wait_enriched(user, "doomed")

    async def applied() -> bool:
        await user.sync()
        return user.records.get("doomed", {}).get("enrichedAt") is not None

    await wait_for(applied, what="enrichment applied to the bookmark before the deletion")
    normalized_url = saved["normalizedUrl"]

    # Before: the user is present in every database (guards the scan against finding nothing).
    for db in ("auth", "bookmarks", "enrichment"):
        assert await rows_referencing(stack.dsn(db), user.user_id, skip_tables=SKIPPED_TABLES), f"user not in {db}"

    expect(await user.request("DELETE", "/v1/account"), 204)

    # At once: the token is refused everywhere, with the 401 contract.
    for method, path, params in (
        ("GET", "/v1/me", None),
        ("GET", "/v1/bookmarks/delta", None),
        ("GET", "/v1/enrichment/status", {"clientBookmarkId": "doomed"}),
    ):
        refused = await user.request(method, path, params=params)
        assert_error(refused, 401, "unauthorized")
        assert refused.headers.get("www-authenticate", "").lower().startswith("bearer"), path
    assert_error(
        await http.post("/v1/auth/refresh", json={"refreshToken": user.session["refreshToken"]}),
        401,
        "invalid-refresh-token",
    )

    # Eventually: nothing of the user in any database.
    leftovers: dict[str, list[dict[str, Any]]] = {}

    async def erased() -> bool:
        leftovers.clear()
        for db in ("auth", "bookmarks", "enrichment"):
            found = await rows_referencing(stack.dsn(db), user.user_id, skip_tables=SKIPPED_TABLES)
            leftovers.update(_unexpected(db, found))
        return not leftovers

    try:
        await wait_for(erased, timeout=120, what="every row of the deleted user erased")
    except AssertionError:
        raise AssertionError(f"rows of the deleted user remain: {leftovers}") from None

    # The result cache is shared by all users: the page's enrichment survives the account.
    cached = await fetch(
        stack.dsn("enrichment"),
        "SELECT normalized_url, result FROM results_cache WHERE normalized_url = $1",
        normalized_url,
    )
    assert cached, f"the shared cache entry of {normalized_url} must survive the deletion"
    assert user.user_id not in str(cached[0]["result"])

    # And another user still gets it from the cache.
    other = await anonymous(http)
    await other.enable_ai()
    hit = expect(await other.enqueue("same", url), 200)
    assert hit.json() == {"cacheHit": True, "status": "completed"}
