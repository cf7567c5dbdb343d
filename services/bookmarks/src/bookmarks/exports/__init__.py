"""Export of a user's library (docs/api-guide.md, section 13): ``GET /v1/exports?format=netscape|json|csv``."""
