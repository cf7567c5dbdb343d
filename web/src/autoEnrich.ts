// Enrichment on save: with "Use AI enrichment" on and this device's "Enrich new links automatically"
// on, each new link is queued for enrichment (POST /v1/enrichment/enqueue) once the server has it. The
// links still to queue live in IndexedDB (meta "autoEnrich"). When the month's allowance is used up,
// automatic enrichment pauses until it resets (meta "autoEnrichPause") and says so once.

import { ApiError, Offline, errorOf } from "./api.ts";
import { backoffMs } from "./backoff.ts";
import type { Db } from "./db.ts";
import { deviceSwitch } from "./deviceSwitch.ts";
import { nowIso } from "./merge.ts";
import { type EnrichPause, type QuotaUse, isPaused, quotaRefusal } from "./quota.ts";
import { type SessionManager, authed, authedJson } from "./session.ts";
import type { Store } from "./store.ts";

const QUEUE_KEY = "autoEnrich";
const PAUSE_KEY = "autoEnrichPause";
const AI_KEY = "useAi";
const CONSENT_RETRIES = 5;
/** This device's choice (localStorage): absent means on, the default once AI enrichment is on. */
export const PREFERENCE_KEY = "enrich-new-links";

const preference = deviceSwitch(PREFERENCE_KEY);

export function autoEnrichPreference(): boolean {
  return preference.on();
}

export function setAutoEnrichPreference(on: boolean): void {
  preference.set(on);
}

export class AutoEnricher {
  /** The account's "Use AI enrichment" as last heard from the server (null: not known yet). */
  useAi: boolean | null = null;
  pause: EnrichPause | null = null;
  private waiting: string[] = [];
  private busy = false;
  private retryAt = 0;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = true;
  private listeners = new Set<() => void>();

  constructor(
    private readonly db: Db,
    private readonly store: Store,
    private readonly session: SessionManager,
    /** Called after a link was queued: its result comes back through delta. */
    private readonly queued: () => void,
  ) {
    store.subscribe(() => this.pump());
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  async load(): Promise<void> {
    const [waiting, pause, useAi] = await Promise.all([
      this.db.getMeta<string[]>(QUEUE_KEY),
      this.db.getMeta<EnrichPause>(PAUSE_KEY),
      this.db.getMeta<boolean>(AI_KEY),
    ]);
    this.waiting = [...new Set([...(waiting ?? []), ...this.waiting])];
    this.pause = pause ?? null;
    this.useAi = useAi ?? null;
    this.changed();
  }

  private persist(): Promise<void> {
    return this.db.setMeta(QUEUE_KEY, [...this.waiting]).catch(() => undefined);
  }

  /** Whether a link added now is enriched on its own. */
  get enabled(): boolean {
    return this.useAi !== false && autoEnrichPreference() && !isPaused(this.pause, Date.now());
  }

  /** The notice to show (once): automatic enrichment is paused and the person has not closed it. */
  get notice(): EnrichPause | null {
    return this.pause && !this.pause.dismissed && isPaused(this.pause, Date.now()) ? this.pause : null;
  }

  async dismissNotice(): Promise<void> {
    if (!this.pause) return;
    this.pause = { ...this.pause, dismissed: true };
    this.changed();
    await this.db.setMeta(PAUSE_KEY, this.pause).catch(() => undefined);
  }

  /** The account's setting, as Settings or the server just said it. */
  async setUseAi(value: boolean): Promise<void> {
    this.useAi = value;
    if (!value) await this.drop();
    await this.db.setMeta(AI_KEY, value).catch(() => undefined);
    this.changed();
    this.pump();
  }

  /** Reads the account's setting from the server (at start; quietly kept as it was when offline). */
  async refreshUseAi(): Promise<void> {
    try {
      const body = await authedJson<{ useAi: boolean } | { data: { useAi: boolean } }>(this.session, "/v1/me/settings");
      await this.setUseAi("data" in body ? body.data.useAi : body.useAi);
    } catch {
      // Offline or refused: the last known value stands.
    }
  }

  /** ``id`` was just added: queue it for enrichment once the server has it, if that is what this device does. */
  async request(id: string): Promise<void> {
    if (!this.enabled || this.waiting.includes(id)) return;
    this.waiting.push(id);
    await this.persist();
    this.pump();
  }

  clear(): void {
    this.waiting = [];
    this.pause = null;
    this.useAi = null;
    this.changed();
  }

  start(): void {
    this.stopped = false;
    void this.refreshUseAi();
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The network is back: what waited for it goes now. */
  wake(): void {
    this.retryAt = 0;
    this.pump();
  }

  private async drop(): Promise<void> {
    this.waiting = [];
    await this.persist();
  }

  /** One link at a time, the first whose bookmark the server has. Runs after every change of the store. */
  pump(): void {
    if (this.stopped || this.busy || !this.waiting.length || !navigator.onLine) return;
    const wait = this.retryAt - Date.now();
    if (wait > 0) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.pump(), wait);
      return;
    }
    if (isPaused(this.pause, Date.now()) || this.useAi === false || !autoEnrichPreference()) {
      void this.drop();
      return;
    }
    const gone = this.waiting.filter((id) => {
      const b = this.store.get(id);
      return !b || b.deleted;
    });
    if (gone.length) {
      this.waiting = this.waiting.filter((id) => !gone.includes(id));
      void this.persist();
    }
    const id = this.waiting.find((i) => this.store.onServer(i));
    if (!id) return;
    this.busy = true;
    void this.enqueue(id).finally(() => {
      this.busy = false;
      this.pump();
    });
  }

  private async enqueue(id: string): Promise<void> {
    const b = this.store.get(id);
    if (!b) return this.remove(id);
    if (this.useAi === null) {
      await this.refreshUseAi();
      if (this.useAi === null) return this.later(backoffMs(++this.failures));
      if (!this.useAi) return;
    }
    const body = JSON.stringify({ clientBookmarkId: id, url: b.url, clientSavedAt: b.clientSavedAt ?? nowIso() });
    try {
      const response = await authed(this.session, "/v1/enrichment/enqueue", { method: "POST", body });
      if (!response.ok) throw await errorOf(response);
      this.failures = 0;
      await this.remove(id);
      this.queued();
    } catch (error) {
      await this.failed(id, error);
    }
  }

  private async remove(id: string): Promise<void> {
    this.waiting = this.waiting.filter((i) => i !== id);
    await this.persist();
  }

  private later(ms: number): void {
    this.retryAt = Date.now() + ms;
  }

  private async failed(id: string, error: unknown): Promise<void> {
    if (error instanceof Offline) return this.later(backoffMs(++this.failures));
    if (!(error instanceof ApiError)) return this.remove(id);
    if (error.code === "consent-required") {
      // AI enrichment is off (switched off elsewhere), or the switch to on has not landed yet: ask.
      await this.refreshUseAi();
      if (this.useAi && this.failures < CONSENT_RETRIES) this.later(backoffMs(++this.failures));
      else await this.remove(id);
      return;
    }
    if (error.code === "quota-exceeded") {
      let use: QuotaUse | null = null;
      try {
        use = (await authedJson<{ data: QuotaUse }>(this.session, "/v1/enrichment/quota")).data;
      } catch {
        // Without the figure, Retry-After tells the month's wait from the minute's.
      }
      const outcome = quotaRefusal(use, error.retryAfter, Date.now());
      if ("pause" in outcome) {
        this.pause = outcome.pause;
        await this.db.setMeta(PAUSE_KEY, this.pause).catch(() => undefined);
        await this.drop();
        this.changed();
        return;
      }
      return this.later(outcome.retryInSeconds * 1000);
    }
    if (error.status === 429 || error.status >= 500 || error.status === 408) {
      return this.later(error.retryAfter ? error.retryAfter * 1000 : backoffMs(++this.failures));
    }
    // Refused for good (a bad address, a bookmark the server no longer has): not asked again.
    await this.remove(id);
  }
}
