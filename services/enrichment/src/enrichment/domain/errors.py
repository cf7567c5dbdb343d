"""Enrichment domain errors (mapped to ``{code, message}`` responses by common.handlers).

Exception tree (beyond common.errors)::

    NotFound
    ├── EnrichmentNotFound     no job and no applied result for this bookmark of this user
    └── SnapshotNotFound       no stored snapshot of that kind for this bookmark of this user
    Unauthorized
    └── UserGone               the account was deleted or merged away
"""

from __future__ import annotations

from common.errors import NotFound, Unauthorized


class EnrichmentNotFound(NotFound):
    default_message = "No enrichment job or result exists for this clientBookmarkId."


class SnapshotNotFound(NotFound):
    default_message = "No snapshot of this kind exists for this clientBookmarkId."


class UserGone(Unauthorized):
    default_message = "This account was deleted or merged into another account."
