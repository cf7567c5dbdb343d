CREATE OR REPLACE FUNCTION bookmark_wire_document() RETURNS trigger
LANGUAGE plpgsql AS $wire$
BEGIN
  NEW.wire_document := '{"ownerUid":' || coalesce(CAST(to_json(CAST("new".owner_uid AS TEXT)) AS TEXT), 'null')
    || ',"clientBookmarkId":' || coalesce(CAST(to_json("new".client_bookmark_id) AS TEXT), 'null')
    || ',"url":' || coalesce(CAST(to_json("new".url) AS TEXT), 'null')
    || ',"normalizedUrl":' || coalesce(CAST(to_json("new".normalized_url) AS TEXT), 'null')
    || ',"domain":' || coalesce(CAST(to_json("new".domain) AS TEXT), 'null')
    || ',"title":' || coalesce(CAST(to_json("new".title) AS TEXT), 'null')
    || ',"description":' || coalesce(CAST(to_json("new".description) AS TEXT), 'null')
    || ',"thumbnailUrl":' || coalesce(CAST(to_json("new".thumbnail_url) AS TEXT), 'null')
    || ',"summary":' || coalesce(CAST(to_json("new".summary) AS TEXT), 'null')
    || ',"tags":' || coalesce(CAST(to_json("new".tags) AS TEXT), 'null')
    || ',"enrichmentStatus":' || coalesce(CAST(to_json("new".enrichment_status) AS TEXT), 'null')
    || ',"snapshotStatus":' || coalesce(CAST(to_json("new".snapshot_status) AS TEXT), 'null')
    || ',"lastErrorCode":' || coalesce(CAST(to_json("new".last_error_code) AS TEXT), 'null')
    || ',"isFavorite":' || coalesce(CAST(to_json("new".is_favorite) AS TEXT), 'null')
    || ',"collectionIds":' || coalesce(CAST(to_json("new".collection_ids) AS TEXT), 'null')
    || ',"userTags":' || coalesce(CAST(to_json("new".user_tags) AS TEXT), 'null')
    || ',"isArchived":' || coalesce(CAST(to_json("new".is_archived) AS TEXT), 'null')
    || ',"notes":' || coalesce(CAST(to_json("new".notes) AS TEXT), 'null')
    || ',"clientSavedAt":' || coalesce(('"' || to_char(timezone('UTC', "new".client_saved_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"lastOpenedAt":' || coalesce(('"' || to_char(timezone('UTC', "new".last_opened_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"createdAt":' || coalesce(('"' || to_char(timezone('UTC', "new".created_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"updatedAt":' || coalesce(('"' || to_char(timezone('UTC', "new".updated_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"enrichedAt":' || coalesce(('"' || to_char(timezone('UTC', "new".enriched_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"linkStatus":' || coalesce(CAST(to_json(CAST("new".link_status AS TEXT)) AS TEXT), 'null')
    || ',"linkCheckedAt":' || coalesce(('"' || to_char(timezone('UTC', "new".link_checked_at), 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')) || '"', 'null')
    || ',"linkMovedTo":' || coalesce(CAST(to_json("new".link_moved_to) AS TEXT), 'null')
    || ',"canonicalUrl":' || coalesce(CAST(to_json("new".canonical_url) AS TEXT), 'null');
  RETURN NEW;
END
$wire$
