"""Export of a user's library (extensions.md §E5): ``GET /v1/exports?format=netscape|json|csv``."""
