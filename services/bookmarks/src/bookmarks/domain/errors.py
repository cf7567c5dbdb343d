"""Bookmark domain errors (mapped to responses by common.handlers)."""

from __future__ import annotations

from common.errors import InvalidRequest, NotFound, Unauthorized


class BookmarkNotFound(NotFound):
    default_message = "No bookmark with this clientBookmarkId."


class UserGone(Unauthorized):
    default_message = "This account was deleted or merged into another account."


class InvalidCollection(InvalidRequest):
    default_message = "This collection cannot be written."


class InvalidHighlight(InvalidRequest):
    default_message = "This highlight cannot be written."
