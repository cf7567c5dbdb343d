// Duplicates: the server's groups of bookmarks that are one link (the same normalized URL), each member
// with its title, domain and save date and a "Keep" choice (the oldest at first); "Merge" keeps the chosen
// one and sends the others to the trash, and the toast's "Undo" restores them from there. Online only.

import { useRef, useState } from "preact/hooks";
import { ApiError, Offline } from "../api.ts";
import type { Device } from "../app.ts";
import { type DuplicateGroup, appendGroups, keepDefault, memberTitle, mergeRequest, savedIso } from "../duplicates.ts";
import { shortDate } from "../trash.ts";
import { plural } from "./common.tsx";
import { Thumb } from "./List.tsx";
import { useOnlinePages } from "./pages.ts";

const OFFLINE_TEXT = "Duplicates need a connection. They show again when you're back online.";

function problem(error: unknown): string {
  if (error instanceof Offline) return "Duplicates need a connection.";
  if (error instanceof ApiError) return error.message;
  return String(error);
}

function Group(props: { group: DuplicateGroup; index: number; busy: boolean; onMerge: (keep: string) => void }) {
  const { group, index } = props;
  const [keep, setKeep] = useState(keepDefault(group));
  const legend = `dup-key-${index}`;
  return (
    <li class="dup-group">
      <fieldset aria-describedby={legend}>
        <legend class="sr-only">{plural(group.bookmarks.length, "copy", "copies")} of one link</legend>
        <p class="dup-key" id={legend}>
          {group.key}
        </p>
        <ul class="dup-members" role="list">
          {group.bookmarks.map((b, m) => {
            const id = b.clientBookmarkId;
            const titleId = `dup-title-${index}-${m}`;
            return (
              <li class={`dup-member${keep === id ? " kept" : ""}`} key={id} data-id={id}>
                <Thumb b={b} />
                <div class="row-main">
                  <span class="title" id={titleId}>
                    {memberTitle(b)}
                  </span>
                  <div class="meta">
                    {b.domain && <span class="domain">{b.domain}</span>}
                    <span>Saved {shortDate(savedIso(b))}</span>
                    {b.url !== memberTitle(b) && <span class="dup-url">{b.url}</span>}
                  </div>
                </div>
                <label class="dup-keep">
                  <input type="radio" name={`keep-${index}`} value={id} checked={keep === id} aria-describedby={titleId} onChange={() => setKeep(id)} />
                  Keep
                </label>
              </li>
            );
          })}
        </ul>
        <div class="dup-actions">
          <button type="button" class="small primary" disabled={props.busy || !keep} aria-describedby={legend} onClick={() => keep && props.onMerge(keep)}>
            Merge
          </button>
        </div>
      </fieldset>
    </li>
  );
}

export function DuplicatesView({ device }: { device: Device }) {
  const pages = useOnlinePages<DuplicateGroup>({
    fetchPage: async (cursor) => {
      const page = await device.duplicatesPage(cursor);
      return { items: page.groups, nextCursor: page.nextCursor };
    },
    append: appendGroups,
    problem,
    toast: (message) => device.toast(message),
  });
  const { items: groups, setItems: setGroups, next, status, error, loadingMore, load, showMore, goneOffline } = pages;
  const [busy, setBusy] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);

  const undo = async (merged: string[]) => {
    try {
      const restored = await device.unmerge(merged);
      device.toast(restored ? `Restored ${plural(restored, "bookmark", "bookmarks")} from the merge.` : "Those bookmarks are no longer in the trash.");
      await load();
    } catch (e) {
      device.toast(`It can't be undone: ${problem(e)}`);
    }
  };

  const merge = async (group: DuplicateGroup, keep: string) => {
    const request = mergeRequest(group, keep);
    setBusy(group.key);
    try {
      const kept = await device.mergeDuplicates(request);
      setGroups((shown) => shown.filter((g) => g.key !== group.key));
      device.toast(`Merged ${plural(request.merge.length, "copy", "copies")} into “${memberTitle(kept)}”.`, () => void undo(request.merge));
      requestAnimationFrame(() => heading.current?.focus());
    } catch (e) {
      if (e instanceof Offline) goneOffline();
      else {
        device.toast(`Nothing merged: ${problem(e)}`);
        void load();
      }
    } finally {
      setBusy(null);
    }
  };

  return (
    <section class="duplicates" aria-labelledby="duplicates-heading">
      <div class="list-head">
        <h1 id="duplicates-heading" ref={heading} tabIndex={-1}>
          Duplicates
        </h1>
        {status === "ready" && groups.length > 0 && (
          <span class="list-count">Choose the copy to keep; the others go to the trash, and their tags, collections and notes join it.</span>
        )}
      </div>
      <div class="trash-scroll">
        {status === "offline" && (
          <p class="empty" role="status">
            {OFFLINE_TEXT}
          </p>
        )}
        {status === "loading" && <p class="empty">Looking for duplicates…</p>}
        {status === "error" && (
          <div class="empty" role="alert">
            <p>Duplicates can't be shown right now: {error}</p>
            <button type="button" onClick={() => void load()}>
              Try again
            </button>
          </div>
        )}
        <ul class="dup-groups" role="list" aria-label="Duplicate groups">
          {groups.map((group, index) => (
            <Group key={group.key} group={group} index={index} busy={busy === group.key} onMerge={(keep) => void merge(group, keep)} />
          ))}
        </ul>
        {status === "ready" && groups.length === 0 && <p class="empty">No duplicates. Your library is tidy.</p>}
        {status === "ready" && next && (
          <div class="show-more">
            <button type="button" disabled={loadingMore} onClick={() => void showMore()}>
              {loadingMore ? "Loading…" : "Show more"}
            </button>
          </div>
        )}
      </div>
    </section>
  );
}
