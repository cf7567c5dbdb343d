// The trash: deleted bookmarks the server still keeps, most recently deleted first, each with when it
// goes for good; "Restore" brings one back (it returns through delta), "Delete forever" and "Empty trash"
// purge. Online only: the device keeps no copy of the trash.

import { useRef, useState } from "preact/hooks";
import { ApiError, Offline } from "../api.ts";
import type { Device } from "../app.ts";
import { type TrashItem, appendPage, retentionDays, trashLine, trashTitle } from "../trash.ts";
import { Dialog } from "./Dialog.tsx";
import { Thumb } from "./List.tsx";
import { useOnlinePages } from "./pages.ts";

const OFFLINE_TEXT = "The trash needs a connection. It shows again when you're back online.";

function problem(error: unknown): string {
  if (error instanceof Offline) return "The trash needs a connection.";
  if (error instanceof ApiError) return error.message;
  return String(error);
}

function ConfirmEmpty(props: { onConfirm: () => void; onClose: () => void }) {
  return (
    <Dialog id="empty-trash" title="Empty the trash?" onClose={props.onClose}>
      <p>Everything in the trash is deleted for good. This can't be undone.</p>
      <div class="actions dialog-actions">
        <button type="button" class="danger-fill" onClick={props.onConfirm}>
          Empty trash
        </button>
        <button type="button" autoFocus onClick={props.onClose}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

export function TrashView({ device }: { device: Device }) {
  const pages = useOnlinePages<TrashItem>({
    fetchPage: (cursor) => device.trashPage(cursor),
    append: appendPage,
    problem,
    toast: (message) => device.toast(message),
  });
  const { items, setItems, next, status, error, loadingMore, load, showMore } = pages;
  const [busy, setBusy] = useState<ReadonlySet<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const list = useRef<HTMLUListElement>(null);

  const failed = (e: unknown) => {
    if (e instanceof Offline) pages.goneOffline();
    else device.toast(problem(e));
  };

  /** Takes ``id`` off the list and moves the focus to the item now in its place (or the heading). */
  const drop = (id: string) => {
    const index = items.findIndex((i) => i.bookmark.clientBookmarkId === id);
    const neighbour = items[index + 1] ?? items[index - 1];
    setItems((shown) => shown.filter((i) => i.bookmark.clientBookmarkId !== id));
    requestAnimationFrame(() => {
      const target = neighbour ? list.current?.querySelector<HTMLElement>(`li[data-id="${CSS.escape(neighbour.bookmark.clientBookmarkId)}"] button`) : null;
      (target ?? heading.current)?.focus();
    });
  };

  const act = async (item: TrashItem, work: () => Promise<unknown>, done: string) => {
    const id = item.bookmark.clientBookmarkId;
    setBusy((b) => new Set([...b, id]));
    try {
      await work();
      drop(id);
      device.toast(done);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) {
        drop(id);
        device.toast("That bookmark is no longer in the trash.");
      } else failed(e);
    } finally {
      setBusy((b) => new Set([...b].filter((x) => x !== id)));
    }
  };

  const restore = (item: TrashItem) =>
    act(
      item,
      () => device.restoreFromTrash(item.bookmark.clientBookmarkId),
      `Restored “${trashTitle(item)}”.`,
    );

  const purge = (item: TrashItem) => act(item, () => device.purgeFromTrash(item.bookmark.clientBookmarkId), `Deleted “${trashTitle(item)}” for good.`);

  const empty = async () => {
    setConfirming(false);
    try {
      await device.purgeFromTrash(null);
      pages.clear();
      device.toast("The trash is empty.");
      requestAnimationFrame(() => heading.current?.focus());
    } catch (e) {
      failed(e);
    }
  };

  const days = items[0] ? retentionDays(items[0]) : null;
  return (
    <>
      <div class="list-head trash-head">
        <h1 ref={heading} tabIndex={-1}>
          Trash
        </h1>
        {status === "ready" && (
          <span class="list-count">
            {days ? `Deleted bookmarks stay here ${days} days, then go for good.` : "Deleted bookmarks stay here for a while, then go for good."}
          </span>
        )}
        <div class="trash-tools">
          <button type="button" class="small danger" disabled={status !== "ready" || items.length === 0} onClick={() => setConfirming(true)}>
            Empty trash
          </button>
        </div>
      </div>
      <div class="trash-scroll">
        {status === "offline" && (
          <p class="empty" role="status">
            {OFFLINE_TEXT}
          </p>
        )}
        {status === "loading" && <p class="empty">Loading the trash…</p>}
        {status === "error" && (
          <div class="empty" role="alert">
            <p>The trash can't be shown right now: {error}</p>
            <button type="button" onClick={() => void load()}>
              Try again
            </button>
          </div>
        )}
        <ul class="trash-list" role="list" aria-label="Trash" ref={list}>
          {items.map((item, index) => {
            const id = item.bookmark.clientBookmarkId;
            const working = busy.has(id);
            return (
              <li class="trash-item" key={id} data-id={id}>
                <Thumb b={item.bookmark} />
                <div class="row-main">
                  <span class="title" id={`trash-title-${index}`}>
                    {trashTitle(item)}
                  </span>
                  <div class="meta">
                    {item.bookmark.domain && <span class="domain">{item.bookmark.domain}</span>}
                    <span class="gone">{trashLine(item)}</span>
                    {item.mergedInto && <span>merged with a duplicate</span>}
                  </div>
                </div>
                <div class="trash-buttons">
                  <button type="button" class="small" disabled={working} aria-describedby={`trash-title-${index}`} onClick={() => void restore(item)}>
                    Restore
                  </button>
                  <button type="button" class="small danger" disabled={working} aria-describedby={`trash-title-${index}`} onClick={() => void purge(item)}>
                    Delete forever
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
        {status === "ready" && items.length === 0 && <p class="empty">Nothing in the trash.</p>}
        {status === "ready" && next && (
          <div class="show-more">
            <button type="button" disabled={loadingMore} onClick={() => void showMore()}>
              {loadingMore ? "Loading…" : "Show more"}
            </button>
          </div>
        )}
      </div>
      {confirming && <ConfirmEmpty onConfirm={() => void empty()} onClose={() => setConfirming(false)} />}
    </>
  );
}
