/** A small typed key-value store: chrome.storage areas in the browser, a Map in unit tests. */

import type { LockRunner } from "../../../../clients/shared/session.ts";

export interface KeyValue {
  get<T>(key: string): Promise<T | undefined>;
  set(key: string, value: unknown): Promise<void>;
  remove(key: string): Promise<void>;
}

export function storageArea(area: chrome.storage.StorageArea): KeyValue {
  return {
    async get<T>(key: string): Promise<T | undefined> {
      const items = await area.get(key);
      return items[key] as T | undefined;
    },
    async set(key: string, value: unknown): Promise<void> {
      await area.set({ [key]: value });
    },
    async remove(key: string): Promise<void> {
      await area.remove(key);
    },
  };
}

export class MemoryKeyValue implements KeyValue {
  readonly data = new Map<string, unknown>();

  async get<T>(key: string): Promise<T | undefined> {
    const value = this.data.get(key);
    return value === undefined ? undefined : (structuredClone(value) as T);
  }

  async set(key: string, value: unknown): Promise<void> {
    this.data.set(key, structuredClone(value));
  }

  async remove(key: string): Promise<void> {
    this.data.delete(key);
  }
}

/** Runs `task` while holding the lock `name`, shared by every page and worker of the extension (the client
 * core's lock adapter). */
export type { LockRunner };

export const webLocks: LockRunner = (name, task) => navigator.locks.request(name, task);

/** A lock for one process only (unit tests): calls with the same name run one after another. */
export function localLocks(): LockRunner {
  const tails = new Map<string, Promise<unknown>>();
  return <T>(name: string, task: () => Promise<T>): Promise<T> => {
    const previous = tails.get(name) ?? Promise.resolve();
    const run = previous.then(task, task);
    tails.set(
      name,
      run.catch(() => undefined),
    );
    return run;
  };
}
