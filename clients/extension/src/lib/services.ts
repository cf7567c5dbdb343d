/** The browser's parts wired together: one set per page or worker. */

import { ApiClient } from "./api.ts";
import { captureTab } from "./capture.ts";
import { CollectionStore } from "./collections.ts";
import { type HighlightDeps, tabChannel } from "./highlighting.ts";
import { HighlightStore } from "./highlights.ts";
import { storageArea, webLocks } from "./kv.ts";
import { LookupCache } from "./lookups.ts";
import { WriteQueue } from "./queue.ts";
import { SessionManager } from "./session.ts";

export interface Services extends HighlightDeps {
  session: SessionManager;
  collections: CollectionStore;
}

export function browserServices(): Services {
  const local = storageArea(chrome.storage.local);
  // fetch called unbound throws "Illegal invocation" in some browsers.
  const fetcher: typeof fetch = (input, init) => fetch(input, init);
  const session = new SessionManager({ local, memory: storageArea(chrome.storage.session), lock: webLocks, fetch: fetcher });
  return {
    session,
    api: new ApiClient(session, fetcher),
    queue: new WriteQueue(local, webLocks),
    collections: new CollectionStore(local),
    highlights: new HighlightStore(local, webLocks),
    page: tabChannel(),
    lookups: new LookupCache(),
    capture: captureTab,
    newId: () => crypto.randomUUID(),
    now: () => new Date(),
  };
}
