// A list the server pages and the device keeps no copy of (the trash, duplicates): the first page on
// open and whenever the network returns, "Show more" by cursor, an offline state while the network is
// gone, and an error state when the first page cannot be had.

import { useEffect, useState } from "preact/hooks";
import { Offline } from "../api.ts";

export type PageStatus = "loading" | "ready" | "offline" | "error";

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface OnlinePages<T> {
  items: T[];
  setItems: (update: (shown: T[]) => T[]) => void;
  next: string | null;
  status: PageStatus;
  error: string | null;
  loadingMore: boolean;
  load: () => Promise<void>;
  showMore: () => Promise<void>;
  goneOffline: () => void;
  /** Nothing shown and nothing more to ask for (the list was emptied on the server). */
  clear: () => void;
}

export function useOnlinePages<T>(options: {
  fetchPage: (cursor: string | null) => Promise<Page<T>>;
  /** ``page`` added after ``shown``, each item once (a change between pages moves the cursor's ground). */
  append: (shown: T[], page: T[]) => T[];
  problem: (error: unknown) => string;
  toast: (message: string) => void;
}): OnlinePages<T> {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [status, setStatus] = useState<PageStatus>(navigator.onLine ? "loading" : "offline");
  const [error, setError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);

  const goneOffline = () => {
    setItems([]);
    setNext(null);
    setStatus("offline");
  };

  const load = async () => {
    if (!navigator.onLine) return goneOffline();
    try {
      const page = await options.fetchPage(null);
      setItems(page.items);
      setNext(page.nextCursor);
      setStatus("ready");
      setError(null);
    } catch (e) {
      if (e instanceof Offline) goneOffline();
      else {
        setError(options.problem(e));
        setStatus("error");
      }
    }
  };

  const showMore = async () => {
    if (!next) return;
    setLoadingMore(true);
    try {
      const page = await options.fetchPage(next);
      setItems((shown) => options.append(shown, page.items));
      setNext(page.nextCursor);
    } catch (e) {
      if (e instanceof Offline) goneOffline();
      else options.toast(options.problem(e));
    } finally {
      setLoadingMore(false);
    }
  };

  useEffect(() => {
    void load();
    const online = () => void load();
    window.addEventListener("online", online);
    window.addEventListener("offline", goneOffline);
    return () => {
      window.removeEventListener("online", online);
      window.removeEventListener("offline", goneOffline);
    };
  }, []);

  const clear = () => {
    setItems([]);
    setNext(null);
  };

  return { items, setItems, next, status, error, loadingMore, load, showMore, goneOffline, clear };
}
