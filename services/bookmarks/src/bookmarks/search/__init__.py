"""Full-text search over a user's bookmarks (docs/api-guide.md, section 12), one feature in one folder.

- :mod:`.routes`: ``GET /v1/bookmarks/search``.
- :mod:`.service`: the use case behind it.
- :mod:`.queries`: the search reads; :mod:`.index`: the row's search columns, written with the row.
- :mod:`.query`: ``parse_query(q) -> Query``, the query language as a typed, frozen AST.
- :mod:`.folding`: ``fold(text)`` (accents and case) and its IMMUTABLE SQL twin.
- :mod:`.sql`: the ``search_vector`` index value and the search statement (SQLAlchemy Core).
- :mod:`.snippet`: ``ts_headline`` output → safe ``<mark>`` HTML.
- :mod:`.cursor`: keyset cursors signed for one user and one query.

Design: docs/decisions/0049-search-inside-postgresql.md and 0050-search-plans.md.
"""
