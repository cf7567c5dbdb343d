"""The internal anti-entropy routes of users (decision 0131): range digests and hashes of consent and plan,
and ``user.updated`` re-published for existing users only, changing nothing else."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import text

BASE = "/internal/anti-entropy/users"


async def test_a_range_digest_and_its_hashes_cover_the_same_users(api: Any) -> None:
    user_id = uuid.UUID((await api.anonymous())["user"]["id"])
    after = uuid.UUID(int=user_id.int - 1)

    digest = (await api.client.post(f"{BASE}/digest", json={"after": str(after), "limit": 1})).json()
    assert digest["upTo"] == str(user_id) and digest["count"] == 1

    records = await api.client.post(f"{BASE}/records", json={"after": str(after), "upTo": str(user_id)})
    assert list(records.json()["hashes"]) == [str(user_id)]
    assert records.json()["hashes"][str(user_id)] == digest["xor"]  # one user: the xor is its hash


async def test_republish_writes_user_updated_for_existing_users_only(api: Any) -> None:
    user_id = (await api.anonymous())["user"]["id"]
    async with api.db.connect() as conn:
        last = (await conn.execute(text("SELECT coalesce(max(id), 0) FROM outbox"))).scalar_one()

    missing = str(uuid.uuid4())
    response = await api.client.post(f"{BASE}/republish", json={"userIds": [user_id, missing]})
    assert response.json() == {"republished": 1}

    async with api.db.connect() as conn:
        rows = (
            await conn.execute(
                text("SELECT key, topic FROM outbox WHERE id > :a AND key = ANY(:k)"),
                {"a": last, "k": [user_id, missing]},
            )
        ).all()
    assert [(r.key, r.topic) for r in rows] == [(user_id, "user.updated")]
