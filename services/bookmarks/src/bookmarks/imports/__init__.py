"""Imports of a user's library (docs/api-guide.md, section 13), one feature in one folder.

- :mod:`.routes`: the HTTP endpoints (upload, job status, report).
- :mod:`.service`: the import job, run by the worker, resumable after a crash.
- :mod:`.rules`: pure rules applying an imported item to the user's bookmarks and collections.
- :mod:`.store` and :mod:`.tables`: the job's tables and their reads and writes.
- :mod:`.formats`: the parsers, one per format, pure and streaming.
"""
