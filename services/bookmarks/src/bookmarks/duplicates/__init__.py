"""Duplicates: a user's live bookmarks of one page, found and merged into the one kept."""
