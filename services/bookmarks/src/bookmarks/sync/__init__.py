"""Delta sync of a user's library (docs/api-guide.md, section 4), one feature in one folder.

- :mod:`.routes`: ``GET /v1/bookmarks/delta``.
- :mod:`.service`: the use case: a cursor's page of the user's stream, and the next cursor.
- :mod:`.queries`: the page as one statement over the bookmarks, collections and highlights streams.
- :mod:`.documents`: the wire documents PostgreSQL renders for each record, and the page's envelope.

Positions come from the one per-user allocator of the write path (``store/repository.py``,
ARCHITECTURE.md, rule 3); this feature only reads them.
"""
