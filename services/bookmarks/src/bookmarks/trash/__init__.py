"""The trash: deleted bookmarks kept restorable for TRASH_RETENTION_DAYS, then purged."""
