"""Reference client of the bookmark sync and enrichment service.

``BookmarkClient`` keeps a local profile (SQLite) with the session, the bookmarks and an offline write
queue; it flushes the queue, runs delta syncs and listens for real-time nudges. ``bookmarks`` (see
:mod:`bookmark_client.cli`) is the command-line front end.
"""

from bookmark_client.backoff import Backoff
from bookmark_client.client import BookmarkClient
from bookmark_client.errors import (
    ApiError,
    BookmarkClientError,
    NotSignedIn,
    Offline,
    PendingChanges,
    SessionExpired,
)
from bookmark_client.models import (
    Bookmark,
    Collection,
    DuplicateGroup,
    DuplicatePage,
    EnqueueResult,
    EnrichmentJob,
    EnrichmentResult,
    FlushResult,
    Highlight,
    PageProgress,
    PairingCode,
    QueuedOp,
    RejectedOp,
    Session,
    SyncResult,
    TrashItem,
    TrashPage,
    User,
    UserSettings,
)

__all__ = [
    "ApiError",
    "Backoff",
    "Bookmark",
    "BookmarkClient",
    "BookmarkClientError",
    "Collection",
    "DuplicateGroup",
    "DuplicatePage",
    "EnqueueResult",
    "EnrichmentJob",
    "EnrichmentResult",
    "FlushResult",
    "Highlight",
    "NotSignedIn",
    "Offline",
    "PageProgress",
    "PairingCode",
    "PendingChanges",
    "QueuedOp",
    "RejectedOp",
    "Session",
    "SessionExpired",
    "SyncResult",
    "TrashItem",
    "TrashPage",
    "User",
    "UserSettings",
]
