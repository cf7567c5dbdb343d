"""Handlers for the events the bookmarks service consumes (run by common.consumer.ConsumerRunner)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.ext.asyncio import AsyncSession

from bookmarks import service
from common.consumer import Handler
from common.events import (
    TOPIC_ENRICHMENT_COMPLETED,
    TOPIC_ENRICHMENT_FAILED,
    TOPIC_LINK_CHECKED,
    TOPIC_USER_DELETED,
    TOPIC_USER_MERGED,
    TOPIC_USER_UPDATED,
    EnrichmentCompleted,
    EnrichmentFailed,
    LinkChecked,
    UserDeleted,
    UserMerged,
    UserUpdated,
)


async def on_enrichment_completed(session: AsyncSession, event: EnrichmentCompleted) -> None:
    await service.apply_enrichment_completed(session, event)


async def on_enrichment_failed(session: AsyncSession, event: EnrichmentFailed) -> None:
    await service.apply_enrichment_failed(session, event)


async def on_link_checked(session: AsyncSession, event: LinkChecked) -> None:
    await service.apply_link_checked(session, event)


async def on_user_updated(session: AsyncSession, event: UserUpdated) -> None:
    await service.apply_plan_change(session, event.userId, event.isPro)


async def on_user_deleted(session: AsyncSession, event: UserDeleted) -> None:
    await service.purge_user(session, event.userId)


async def on_user_merged(session: AsyncSession, event: UserMerged) -> None:
    await service.merge_users(session, source=event.sourceUserId, target=event.userId)


HANDLERS: Mapping[str, Handler] = {
    TOPIC_ENRICHMENT_COMPLETED: on_enrichment_completed,
    TOPIC_ENRICHMENT_FAILED: on_enrichment_failed,
    TOPIC_LINK_CHECKED: on_link_checked,
    TOPIC_USER_UPDATED: on_user_updated,
    TOPIC_USER_DELETED: on_user_deleted,
    TOPIC_USER_MERGED: on_user_merged,
}
