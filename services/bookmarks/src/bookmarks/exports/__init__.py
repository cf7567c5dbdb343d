"""Export of a user's library (docs/api-guide.md, section 13): ``GET /v1/exports?format=netscape|json|csv``.

- :mod:`.routes`: the endpoint; :mod:`.stream`: one snapshot streamed through a writer.
- :mod:`.queries`: the reads of a whole library; :mod:`.folders`: the collection tree; :mod:`.formats`: the writers.
"""
