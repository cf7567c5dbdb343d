"""POST /v1/enrichment/capture: a page the user's browser rendered, queued privately like an enqueue.

No worker runs on this database (as in test_api.py): jobs stay where a test leaves them.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from enrichment_support import Api, AuthUsers, User

PAGE = "<html><head><title>Members only</title></head><body><p>Private text of the member page.</p></body></html>"


def page(key: str) -> str:
    return f"https://members.example.org/{key}"


async def capture(api: Api, user: User, bookmark_id: str, url: str, html: str = PAGE, **extra: Any) -> Any:
    body = {"clientBookmarkId": bookmark_id, "url": url, "html": html, **extra}
    return await api.http.post("/v1/enrichment/capture", json=body, headers=user.headers)


async def month_used(api: Api, user: User) -> int:
    sql = "SELECT COALESCE(max(month_used), 0) FROM user_quotas WHERE user_id = :u"
    return int(await api.db.scalar(sql, u=user.id))


async def job_of(api: Api, user: User, bookmark_id: str) -> Any:
    return await api.db.one(
        "SELECT j.* FROM bookmark_enrichments be JOIN jobs j ON j.id = be.job_id "
        "WHERE be.user_id = :u AND be.client_bookmark_id = :b",
        u=user.id,
        b=bookmark_id,
    )


async def test_a_capture_is_a_private_pending_job_charged_like_an_enqueue(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    bookmark = bid()
    url = page(uuid.uuid4().hex)

    response = await capture(api, user, bookmark, url, title="Members only")

    assert response.status_code == 202, response.text
    assert response.json() == {"accepted": True, "status": "pending"}
    job = await job_of(api, user, bookmark)
    assert (job["private_for"], job["charged_user_id"], job["status"]) == (user.id, user.id, "pending")
    stored = await api.db.one("SELECT html, title, user_id FROM captured_pages WHERE job_id = :j", j=job["id"])
    assert (bytes(stored["html"]).decode(), stored["title"], stored["user_id"]) == (PAGE, "Members only", user.id)
    assert await month_used(api, user) == 1
    status = await api.status(user, bookmark)
    assert status.json() == {
        "data": {"clientBookmarkId": bookmark, "status": "pending", "result": None, "errorCode": None}
    }


async def test_a_capture_while_the_last_one_waits_replaces_its_html_uncharged(
    api: Api, users: AuthUsers, bid: Any
) -> None:
    user = await users.create()
    bookmark = bid()
    url = page(uuid.uuid4().hex)
    assert (await capture(api, user, bookmark, url)).status_code == 202

    again = await capture(api, user, bookmark, url, html="<p>Second look</p>")

    assert again.json() == {"accepted": True, "status": "pending"}
    assert await month_used(api, user) == 1
    job = await job_of(api, user, bookmark)
    assert await api.db.scalar("SELECT count(*) FROM jobs WHERE private_for = :u", u=user.id) == 1
    stored = await api.db.scalar("SELECT html FROM captured_pages WHERE job_id = :j", j=job["id"])
    assert bytes(stored) == b"<p>Second look</p>"


async def test_captures_and_enqueues_of_one_url_never_share_a_job_across_users(
    api: Api, users: AuthUsers, bid: Any
) -> None:
    owner, other = await users.create(), await users.create()
    url = page(uuid.uuid4().hex)
    assert (await capture(api, owner, bid(), url)).status_code == 202

    # Another user's enqueue of the URL does not join the captured job: it gets a shared job of its own.
    other_bookmark = bid()
    assert (await api.enqueue(other, other_bookmark, url)).status_code == 202
    shared = await job_of(api, other, other_bookmark)
    assert shared["private_for"] is None
    assert await month_used(api, other) == 1
    # And a capture never joins the shared job in flight, nor reads the shared cache.
    await api.db.execute(
        "INSERT INTO results_cache (normalized_url, result, expires_at) "
        "VALUES (:n, CAST(:r AS jsonb), now() + interval '1 day') ON CONFLICT DO NOTHING",
        n=url,
        r=json.dumps({"normalizedUrl": url, "domain": "members.example.org", "tags": [], "snapshotStatus": "ready"}),
    )
    late = await users.create()
    late_bookmark = bid()
    response = await capture(api, late, late_bookmark, url)
    assert response.status_code == 202
    assert response.json() == {"accepted": True, "status": "pending"}
    assert (await job_of(api, late, late_bookmark))["private_for"] == late.id
    assert await month_used(api, late) == 1


async def test_captures_count_against_the_enqueue_quota(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    for i in range(3):
        assert (await api.enqueue(user, bid(), page(f"q-{uuid.uuid4().hex}-{i}"))).status_code == 202
    for i in range(2):
        assert (await capture(api, user, bid(), page(f"q-{uuid.uuid4().hex}-{i}"))).status_code == 202

    refused = await capture(api, user, bid(), page(f"q-{uuid.uuid4().hex}"))

    assert refused.status_code == 429
    assert refused.json()["code"] == "quota-exceeded"
    assert int(refused.headers["retry-after"]) >= 1
    assert await month_used(api, user) == 5


async def test_consent_then_url_are_checked(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create(use_ai=False)
    refused = await capture(api, user, bid(), "not a url")
    assert refused.status_code == 403
    assert refused.json()["code"] == "consent-required"
    await users.set_consent(user, True)
    for bad in ("not a url", "ftp://x.example/", "javascript:alert(1)"):
        response = await capture(api, user, bid(), bad)
        assert response.status_code == 400, bad
        assert response.json()["code"] == "invalid-url"
    assert await month_used(api, user) == 0


async def test_hostile_bodies_are_refused_and_change_nothing(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    url = page(uuid.uuid4().hex)
    cases: list[tuple[bytes, int, str]] = [
        (b"{not json", 400, "invalid-request"),
        (b'{"clientBookmarkId": "a", "url": "https://x.example/", "html": "\xff\xfe bad utf-8"}', 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a", "url": url, "html": 42}).encode(), 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a", "url": url, "html": None}).encode(), 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a", "url": url}).encode(), 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a b", "url": url, "html": "x"}).encode(), 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a", "url": url, "html": "x", "title": 7}).encode(), 400, "invalid-request"),
        (b'{"clientBookmarkId": "a", "url": "https://x.example/", "html": "lone \\ud800 surrogate"}', 400, "invalid-request"),
        (json.dumps({"clientBookmarkId": "a", "url": url, "html": "x" * (10 * 1024 * 1024 + 1)}).encode(), 413, "payload-too-large"),
        # 10 MiB of characters, 20 MiB of UTF-8: over the limit although the character count is not.
        (json.dumps({"clientBookmarkId": "a", "url": url, "html": "é" * (5 * 1024 * 1024 + 1)}, ensure_ascii=False).encode(), 413, "payload-too-large"),
        (b'{"clientBookmarkId": "a", "url": "https://x.example/", "html": "' + b"y" * (16 * 1024 * 1024) + b'"}', 413, "payload-too-large"),
    ]  # fmt: skip
    for body, status, code in cases:
        response = await api.http.post(
            "/v1/enrichment/capture", content=body, headers={**user.headers, "content-type": "application/json"}
        )
        assert response.status_code == status, (body[:80], response.text[:200])
        assert response.json()["code"] == code, body[:80]
        assert set(response.json()) == {"code", "message"}
    assert not await api.db.rows("SELECT 1 FROM bookmark_enrichments WHERE user_id = :u", u=user.id)
    assert await month_used(api, user) == 0


async def test_exactly_ten_mib_of_html_is_accepted(api: Api, users: AuthUsers, bid: Any) -> None:
    user = await users.create()
    html = "<p>" + "z" * (10 * 1024 * 1024 - 7) + "</p>"
    assert len(html.encode()) == 10 * 1024 * 1024

    response = await capture(api, user, bid(), page(uuid.uuid4().hex), html=html)

    assert response.status_code == 202, response.text[:200]


async def test_capture_needs_a_token(api: Api) -> None:
    response = await api.http.post(
        "/v1/enrichment/capture", json={"clientBookmarkId": "a", "url": page("x"), "html": PAGE}
    )
    assert response.status_code == 401
