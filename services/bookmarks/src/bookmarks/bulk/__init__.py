"""Bulk changes with undo: one call changes up to 10,000 bookmarks; its token puts them back."""
