"""Highlights and notes (docs/api-guide.md, section 16)."""
