"""HTTP routes of bookmarks and collections (docs/api-guide.md, sections 3 and 11); each feature's routes
are in its folder (delta in ``sync/``, search in ``search/``)."""

from __future__ import annotations

import functools
from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic.alias_generators import to_snake

from bookmarks import service
from bookmarks.api import wire
from bookmarks.api.deps import ClientBookmarkId, CollectionId, CurrentUser, Sessions
from bookmarks.api.schemas import (
    ERROR_RESPONSES,
    BookmarkEnvelope,
    BookmarkUpsert,
    CollectionEnvelope,
    CollectionsReplace,
    CollectionUpsert,
)
from bookmarks.domain.collections import KEEP_PARENT, CollectionWrite
from common import anti_entropy
from common.errors import InvalidUrl
from common.urls import InvalidUrlError

# The body's (camelCase) field names as domain names: a handful of names, converted once each.
_snake = functools.cache(to_snake)

router = APIRouter(prefix="/v1/bookmarks", tags=["bookmarks"], responses=ERROR_RESPONSES)
collections_router = APIRouter(prefix="/v1/collections", tags=["collections"], responses=ERROR_RESPONSES)


@router.get("/lookup", response_model=BookmarkEnvelope)
async def lookup_bookmark(
    user: CurrentUser,
    sessions: Sessions,
    url: Annotated[str, Query(max_length=2048, description="Any spelling of the URL; it is normalized.")],
) -> Response:
    """The caller's live bookmark whose normalized URL, else whose page's canonical URL, equals ``url``'s
    normalized form (404 when there is none)."""
    try:
        view = await service.lookup_bookmark(sessions=sessions, owner=user.user_id, url=url)
    except InvalidUrlError as exc:
        raise InvalidUrl(str(exc)) from exc
    return wire.json_response({"data": wire.bookmark(view.record, is_pro=view.is_pro)})


@router.put("/{clientBookmarkId}", response_model=BookmarkEnvelope)
async def put_bookmark(
    clientBookmarkId: ClientBookmarkId,  # noqa: N803 - the spec's name
    body: BookmarkUpsert,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Create or update (merge) a bookmark; idempotent."""
    sent = body.model_dump(include=body.model_fields_set)
    try:  # the URL is checked and normalized once, here
        write = service.client_write({_snake(k): v for k, v in sent.items()})
    except InvalidUrlError as exc:
        raise InvalidUrl(str(exc)) from exc
    view = await service.upsert_bookmark(
        sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId, write=write
    )
    return wire.json_response({"data": wire.bookmark(view.record, is_pro=view.is_pro)})


@router.delete("/{clientBookmarkId}", status_code=204)
async def delete_bookmark(clientBookmarkId: ClientBookmarkId, user: CurrentUser, sessions: Sessions) -> Response:  # noqa: N803
    """Soft-delete (idempotent); the bookmark then appears as a tombstone in delta."""
    await service.delete_bookmark(sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId)
    return Response(status_code=204)


@router.put("/{clientBookmarkId}/collections", status_code=204)
async def put_collections(
    clientBookmarkId: ClientBookmarkId,  # noqa: N803
    body: CollectionsReplace,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Replace the bookmark's collection memberships."""
    await service.replace_collections(
        sessions=sessions, owner=user.user_id, client_bookmark_id=clientBookmarkId, collection_ids=body.collectionIds
    )
    return Response(status_code=204)


@collections_router.put("/{collectionId}", response_model=CollectionEnvelope)
async def put_collection(
    collectionId: CollectionId,  # noqa: N803 - the spec's name
    body: CollectionUpsert,
    user: CurrentUser,
    sessions: Sessions,
) -> Response:
    """Create or merge a collection (absent ``parentId`` keeps the stored parent); idempotent."""
    write = CollectionWrite(
        name=body.name,
        parent_id=body.parentId if "parentId" in body.model_fields_set else KEEP_PARENT,
    )
    record = await service.upsert_collection(
        sessions=sessions, owner=user.user_id, collection_id=collectionId, write=write
    )
    return wire.json_response({"data": wire.collection(record)})


@collections_router.delete("/{collectionId}", status_code=204)
async def delete_collection(collectionId: CollectionId, user: CurrentUser, sessions: Sessions) -> Response:  # noqa: N803
    """Delete (idempotent): children move to its parent, its id leaves every bookmark's collectionIds."""
    await service.delete_collection(sessions=sessions, owner=user.user_id, collection_id=collectionId)
    return Response(status_code=204)


# --- internal: anti-entropy of the projections of bookmarks (never routed by the gateway) -------------

internal_router = APIRouter(prefix="/internal/anti-entropy/bookmark-urls", tags=["internal"], include_in_schema=False)


@internal_router.post("/digests", response_model=anti_entropy.DigestPage)
async def url_digests(body: anti_entropy.DigestRequest, sessions: Sessions) -> anti_entropy.DigestPage:
    """Digests of users' live bookmarks (id → normalized URL), a page of users at a time."""
    return await service.url_digests(sessions=sessions, after=body.after, limit=body.limit)


@internal_router.post("/records", response_model=anti_entropy.RecordHashes)
async def url_records(body: anti_entropy.RecordsRequest, sessions: Sessions) -> anti_entropy.RecordHashes:
    """Per-id hashes of one user's live bookmarks in some buckets, and the ids changed lately."""
    return await service.url_records(
        sessions=sessions, owner=body.userId, buckets=body.buckets, settle_seconds=body.settleSeconds
    )


@internal_router.post("/republish", response_model=anti_entropy.Republished)
async def republish_urls(body: anti_entropy.RepublishRequest, sessions: Sessions) -> anti_entropy.Republished:
    """Publish the current state of these bookmarks again (new events), for a projection that lost it."""
    return anti_entropy.Republished(
        republished=await service.republish_urls(sessions=sessions, owner=body.userId, ids=body.ids)
    )
