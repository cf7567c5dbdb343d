// The region "Bookmark details": every field a person edits, applied locally at once and sent, and the
// link's health with what to do about it.

import { useEffect, useRef, useState } from "preact/hooks";
import { type Device, enrichErrorText } from "../app.ts";
import { checkTagInput, checkTags, sameTag } from "../../../clients/shared/tags.ts";
import { ApiError } from "../api.ts";
import { CHECK_OFFLINE_TEXT, checkRefusedText, linkCheckedLine, moveFields, waybackUrl } from "../links.ts";
import type { BookmarkFields, LocalBookmark } from "../model.ts";
import { platformImagePath } from "../preview.ts";
import { authed } from "../session.ts";
import { Icon, useOnline } from "./common.tsx";
import { flatten, buildTree } from "./Sidebar.tsx";
import { setUi } from "./state.ts";

const SAVE_DELAY_MS = 350;

function useDraft(device: Device, b: LocalBookmark) {
  const timer = useRef<number | undefined>(undefined);
  const draft = useRef<BookmarkFields>({});
  const flush = () => {
    window.clearTimeout(timer.current);
    const fields = draft.current;
    draft.current = {};
    if (Object.keys(fields).length) void device.save(b.clientBookmarkId, fields);
  };
  const edit = (fields: BookmarkFields) => {
    draft.current = { ...draft.current, ...fields };
    window.clearTimeout(timer.current);
    timer.current = window.setTimeout(flush, SAVE_DELAY_MS);
  };
  useEffect(() => flush, [b.clientBookmarkId]);
  return { edit, flush };
}

function Screenshot({ device, id }: { device: Device; id: string }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => () => void (src && URL.revokeObjectURL(src)), [src]);
  const load = async () => {
    try {
      const response = await authed(device.session, `/v1/enrichment/snapshot?clientBookmarkId=${encodeURIComponent(id)}&kind=screenshot`);
      if (!response.ok) throw new Error(response.status === 404 ? "No screenshot was taken of this page." : "The screenshot could not be loaded.");
      setSrc(URL.createObjectURL(await response.blob()));
    } catch (e) {
      setError(e instanceof Error && e.message !== "You're offline." ? e.message : "You're offline.");
    }
  };
  if (src) return <img class="screenshot" src={src} alt="Screenshot of the saved page" />;
  return (
    <p>
      <button type="button" class="small" onClick={load}>
        Show screenshot
      </button>
      {error && <span class="error-text"> {error}</span>}
    </p>
  );
}

/** The link's status in words, when it was checked, and what can be done: check it again, follow a move,
 * read the saved copy, or look it up in the Wayback Machine. */
function LinkHealth({ device, bookmark: b }: { device: Device; bookmark: LocalBookmark }) {
  const online = useOnline();
  const [message, setMessage] = useState<string | null>(null);
  const [asking, setAsking] = useState(false);
  useEffect(() => setMessage(null), [b.clientBookmarkId, b.linkCheckedAt]);
  const checkNow = async () => {
    setMessage(null);
    setAsking(true);
    try {
      await device.checkLink(b.clientBookmarkId);
      setMessage("Checking the link. The result shows here in a moment.");
    } catch (error) {
      setMessage(error instanceof ApiError ? (checkRefusedText(error.status, error.retryAfter) ?? error.message) : CHECK_OFFLINE_TEXT);
    } finally {
      setAsking(false);
    }
  };
  const move = moveFields(b);
  const movedTo = move?.url ?? null;
  const useNewAddress = () => {
    if (!move) return;
    void device.save(b.clientBookmarkId, move);
    device.toast("Saved the new address.");
  };
  return (
    <div class="field link-health" role="group" aria-labelledby="d-link">
      <h3 id="d-link">Link</h3>
      <p class={`link-line link-${b.linkStatus ?? "unchecked"}`}>{linkCheckedLine(b)}</p>
      {movedTo && (
        <p class="hint moved-to">
          New address: <span class="address">{movedTo}</span>
        </p>
      )}
      <div class="actions">
        <button type="button" class="small" disabled={!online || asking} onClick={() => void checkNow()}>
          Check now
        </button>
        {movedTo && (
          <button type="button" class="small" onClick={useNewAddress}>
            Use new address
          </button>
        )}
        <button type="button" class="small" onClick={() => setUi({ readerId: b.clientBookmarkId })}>
          Open saved copy
        </button>
        <a class="button-link small" href={waybackUrl(b)} target="_blank" rel="noopener noreferrer">
          Wayback Machine
        </a>
      </div>
      {!online && <p class="hint">Checking a link needs a connection.</p>}
      <p class={message ? "message" : "sr-only"} role="status">
        {message ?? ""}
      </p>
    </div>
  );
}

export function Details({ device, bookmark: b }: { device: Device; bookmark: LocalBookmark }) {
  const { edit, flush } = useDraft(device, b);
  const [title, setTitle] = useState(b.title ?? "");
  const [notes, setNotes] = useState(b.notes ?? "");
  const [tags, setTags] = useState(b.userTags.join(", "));
  // Why the server would refuse the typed tags; while there is one, the typed tags are not saved.
  const [tagError, setTagError] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const focused = useRef<string | null>(null);

  // Another device's change shows here unless this field is being edited.
  useEffect(() => {
    if (focused.current !== "title") setTitle(b.title ?? "");
    if (focused.current !== "notes") setNotes(b.notes ?? "");
    if (focused.current !== "tags") {
      setTags(b.userTags.join(", "));
      setTagError(null);
    }
  }, [b.title, b.notes, b.userTags.join("\u0000")]);
  useEffect(() => {
    setMessage(null);
    setTagError(null);
    heading.current?.focus();
  }, [b.clientBookmarkId]);

  const close = () => {
    flush();
    setUi({ detailsId: null });
    document.querySelector<HTMLElement>(`li[data-id="${CSS.escape(b.clientBookmarkId)}"] .details-button`)?.focus();
  };
  const acceptTags = (accepted: string[]) => {
    const next = checkTags([...b.userTags, ...accepted]);
    if (next.tags === null) {
      setTagError(next.error);
      return;
    }
    setTagError(null);
    setTags(next.tags.join(", "));
    void device.save(b.clientBookmarkId, { userTags: next.tags });
  };
  const enrich = async () => {
    setMessage("Asking for enrichment…");
    try {
      setMessage(await device.enrich(b));
    } catch (error) {
      setMessage(enrichErrorText(error));
    }
  };
  const collections = flatten(buildTree(device.store.collections()));
  const aiTags = b.tags.filter((t) => !b.userTags.some((u) => sameTag(u, t)));
  // Only the platform's copy of the page's picture: the panel never makes the browser contact the site.
  const picture = platformImagePath(b.thumbnailUrl);

  return (
    <section class="details" aria-label="Bookmark details" onKeyDown={(e) => e.key === "Escape" && (e.stopPropagation(), close())}>
      <header class="details-head">
        <h2 tabIndex={-1} ref={heading}>
          Details
        </h2>
        <button type="button" class="icon-button" aria-label="Close details" onClick={close}>
          <Icon name="close" />
        </button>
      </header>
      {picture && <img class="details-picture" src={picture} alt="" />}
      <a class="details-url" href={b.url} target="_blank" rel="noopener noreferrer">
        {b.url}
      </a>
      <div class="actions">
        <button type="button" aria-pressed={b.isFavorite} onClick={() => void device.save(b.clientBookmarkId, { isFavorite: !b.isFavorite })}>
          {b.isFavorite ? "Unfavorite" : "Favorite"}
        </button>
        <button type="button" onClick={() => void device.save(b.clientBookmarkId, { isArchived: !b.isArchived })}>
          {b.isArchived ? "Unarchive" : "Archive"}
        </button>
        <button type="button" onClick={() => setUi({ readerId: b.clientBookmarkId })}>
          Read
        </button>
        <button type="button" onClick={enrich}>
          Enrich
        </button>
        <button
          type="button"
          class="danger"
          onClick={() => {
            setUi({ detailsId: null });
            void device.remove([b.clientBookmarkId]);
          }}
        >
          Delete
        </button>
      </div>
      {message && (
        <p class="message" role="status">
          {message}
        </p>
      )}
      <LinkHealth device={device} bookmark={b} />
      <div class="field">
        <label for="d-title">Title</label>
        <input
          id="d-title"
          value={title}
          maxLength={1000}
          onFocus={() => (focused.current = "title")}
          onBlur={() => ((focused.current = null), flush())}
          onInput={(e) => {
            setTitle(e.currentTarget.value);
            edit({ title: e.currentTarget.value || null });
          }}
        />
      </div>
      <div class="field">
        <label for="d-notes">Notes</label>
        <textarea
          id="d-notes"
          rows={4}
          value={notes}
          maxLength={10000}
          onFocus={() => (focused.current = "notes")}
          onBlur={() => ((focused.current = null), flush())}
          onInput={(e) => {
            setNotes(e.currentTarget.value);
            edit({ notes: e.currentTarget.value || null });
          }}
        />
      </div>
      <div class="field">
        <label for="d-tags">Tags</label>
        <input
          id="d-tags"
          value={tags}
          aria-describedby="d-tags-hint"
          aria-invalid={tagError !== null}
          onFocus={() => (focused.current = "tags")}
          onBlur={() => ((focused.current = null), flush())}
          onInput={(e) => {
            setTags(e.currentTarget.value);
            const typed = checkTagInput(e.currentTarget.value);
            setTagError(typed.error);
            if (typed.tags) edit({ userTags: typed.tags });
          }}
        />
        <p class={tagError ? "hint error-text" : "hint"} id="d-tags-hint" aria-live="polite">
          {tagError ?? "Separate tags with commas."}
        </p>
      </div>
      {aiTags.length > 0 && (
        <div class="field">
          <h3>Suggested tags</h3>
          <ul class="chips">
            {aiTags.map((t) => (
              <li key={t}>
                <button type="button" class="chip" onClick={() => acceptTags([t])} aria-label={`Add tag ${t}`}>
                  + {t}
                </button>
              </li>
            ))}
          </ul>
          {aiTags.length > 1 && (
            <button type="button" class="small" onClick={() => acceptTags(aiTags)}>
              Add all suggested tags
            </button>
          )}
        </div>
      )}
      {b.userTags.length > 0 && (
        <div class="field">
          <h3>Your tags</h3>
          <ul class="chips">
            {b.userTags.map((t) => (
              <li key={t}>
                <button
                  type="button"
                  class="chip"
                  aria-label={`Remove tag ${t}`}
                  onClick={() => {
                    const next = b.userTags.filter((u) => u !== t);
                    setTags(next.join(", "));
                    void device.save(b.clientBookmarkId, { userTags: next });
                  }}
                >
                  {t} ×
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      <fieldset class="field">
        <legend>Collections</legend>
        {collections.length === 0 && <p class="hint">No collections yet. Create one in the sidebar.</p>}
        {collections.map(({ collection: c, depth }) => (
          <label key={c.id} class="check" style={{ paddingLeft: `${(depth - 1) * 16}px` }}>
            <input
              type="checkbox"
              checked={b.collectionIds.includes(c.id)}
              onChange={(e) => {
                const ids = e.currentTarget.checked ? [...b.collectionIds, c.id] : b.collectionIds.filter((id) => id !== c.id);
                void device.save(b.clientBookmarkId, { collectionIds: ids });
              }}
            />
            {c.name}
          </label>
        ))}
      </fieldset>
      {(b.summary || b.saveWhy || b.description) && (
        <div class="field">
          {b.summary && (
            <>
              <h3>Summary</h3>
              <p class="prose">{b.summary}</p>
            </>
          )}
          {b.saveWhy && (
            <>
              <h3>Why you saved it</h3>
              <p class="prose">{b.saveWhy}</p>
            </>
          )}
          {!b.summary && b.description && (
            <>
              <h3>Description</h3>
              <p class="prose">{b.description}</p>
            </>
          )}
        </div>
      )}
      {b.snapshotStatus === "completed" && <Screenshot device={device} id={b.clientBookmarkId} />}
      <p class="hint">
        Saved {new Date(b.clientSavedAt ?? b.createdAt).toLocaleString()}
        {b.enrichmentStatus === "failed" && b.lastErrorCode ? ` · Enrichment failed (${b.lastErrorCode})` : ""}
      </p>
    </section>
  );
}
