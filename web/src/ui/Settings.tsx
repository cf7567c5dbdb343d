// Settings: AI consent, plan, devices (pair and join), keyboard shortcuts, theme, sign out.

import { useEffect, useState } from "preact/hooks";
import { ApiError } from "../api.ts";
import type { Device } from "../app.ts";
import { autoEnrichPreference, setAutoEnrichPreference } from "../autoEnrich.ts";
import type { User } from "../model.ts";
import { type QuotaUse, planLineWithoutUse, quotaLine } from "../quota.ts";
import { setShortcutsOn, shortcutsOn } from "../shortcuts.ts";
import { Dialog } from "./Dialog.tsx";
import { JoinForm } from "./Join.tsx";
import { type Theme, applyTheme, currentTheme } from "./theme.ts";

interface Pairing {
  code: string;
  expiresAt: string;
}

export function formatCode(code: string): string {
  const clean = code.replace(/[^0-9A-Za-z]/g, "").toUpperCase();
  return clean.length === 8 ? `${clean.slice(0, 4)}-${clean.slice(4)}` : clean;
}

function PairDevice({ device }: { device: Device }) {
  const [pairing, setPairing] = useState<Pairing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!pairing) return;
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [pairing]);
  const start = async () => {
    setError(null);
    try {
      setPairing((await device.json<{ data: Pairing }>("/v1/auth/pairing", { method: "POST" })).data);
      setNow(Date.now());
    } catch (e) {
      if (e instanceof ApiError && e.code === "rate-limited") setError("Too many codes at once. Use one of them, or wait a few minutes.");
      else setError(e instanceof ApiError ? e.message : "You're offline. Pairing needs a connection.");
    }
  };
  const left = pairing ? Math.max(0, Math.round((Date.parse(pairing.expiresAt) - now) / 1000)) : 0;
  return (
    <div>
      <p>Use your library on another phone or computer: get a code here and enter it there.</p>
      <button type="button" onClick={start}>
        Pair a device
      </button>
      {error && <p class="error-text">{error}</p>}
      {pairing && (
        <div class="pairing" aria-live="polite">
          <p class="code" id="pairing-code-shown" aria-label="Your pairing code">
            {formatCode(pairing.code)}
          </p>
          <p class="hint">
            {left > 0
              ? `On the other device choose “Join with a code” and enter it. It works once and expires in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}.`
              : "This code has expired. Get a new one."}
          </p>
        </div>
      )}
    </div>
  );
}

function PlanSection({ device, me }: { device: Device; me: User | null }) {
  const [use, setUse] = useState<QuotaUse | null>(null);
  const [missing, setMissing] = useState<string | null>(null);
  useEffect(() => {
    device.json<{ data: QuotaUse }>("/v1/enrichment/quota").then(
      (body) => setUse(body.data),
      (e) => setMissing(e instanceof ApiError ? "Usage isn't available right now." : "Usage shows when you're online."),
    );
  }, []);
  const pro = use ? use.plan === "pro" : me?.isPro;
  return (
    <section aria-labelledby="s-plan">
      <h3 id="s-plan">Plan</h3>
      <p id="plan-use" aria-live="polite">
        {use ? quotaLine(use) : planLineWithoutUse(me?.isPro)}
      </p>
      {missing && !pro && <p class="hint">{missing}</p>}
      <p class="hint">
        {pro
          ? "Enrichment without limits, and the reason you saved a page."
          : "Up to 200 enrichments a month and 5 a minute; pages already enriched, for you or anyone, don't count. Imports are enriched on Pro."}
      </p>
    </section>
  );
}

export function Settings(props: { device: Device; onClose: () => void }) {
  const { device } = props;
  const [useAi, setUseAi] = useState<boolean | null>(null);
  const [me, setMe] = useState<User | null>(device.session.user);
  const [error, setError] = useState<string | null>(null);
  const [theme, setTheme] = useState<Theme>(currentTheme());
  const [autoEnrich, setAutoEnrich] = useState(autoEnrichPreference);
  const [shortcuts, setShortcuts] = useState(shortcutsOn);
  useEffect(() => {
    device.json<{ useAi: boolean } | { data: { useAi: boolean } }>("/v1/me/settings").then(
      (body) => {
        const value = "data" in body ? body.data.useAi : body.useAi;
        setUseAi(value);
        void device.autoEnrich.setUseAi(value);
      },
      () => setError("Settings need a connection. You're offline."),
    );
    device.json<User | { data: User }>("/v1/me").then(
      (body) => setMe("data" in body ? body.data : body),
      () => undefined,
    );
  }, []);
  const toggleAi = async (value: boolean) => {
    setUseAi(value);
    void device.autoEnrich.setUseAi(value); // a link added right after the switch already counts
    try {
      await device.json("/v1/me/settings", { method: "PATCH", body: JSON.stringify({ useAi: value }) });
    } catch {
      setUseAi(!value);
      void device.autoEnrich.setUseAi(!value);
      setError("That didn't save. Check your connection and try again.");
    }
  };
  const signOut = async () => {
    const waiting = device.store.queue.length;
    if (waiting && !window.confirm(`${waiting} changes haven't reached the server yet and will be lost. Sign out anyway?`)) return;
    await device.signOut();
  };
  return (
    <Dialog id="settings" title="Settings" onClose={props.onClose}>
      <section aria-labelledby="s-ai">
        <h3 id="s-ai">AI enrichment</h3>
        <label class="switch">
          <input type="checkbox" checked={useAi ?? false} disabled={useAi === null} onChange={(e) => void toggleAi(e.currentTarget.checked)} />
          <span class="switch-track" aria-hidden="true" />
          Use AI enrichment
        </label>
        <p class="hint">Summaries, suggested tags and a saved copy of each page. Pages are sent to our AI provider only while this is on.</p>
        {useAi && (
          <>
            <label class="check auto-enrich">
              <input
                type="checkbox"
                checked={autoEnrich}
                aria-describedby="s-auto-enrich-hint"
                onChange={(e) => {
                  setAutoEnrichPreference(e.currentTarget.checked);
                  setAutoEnrich(e.currentTarget.checked);
                }}
              />
              Enrich new links automatically
            </label>
            <p class="hint" id="s-auto-enrich-hint">
              Each link you save on this device is enriched right away, without pressing “Enrich”.
            </p>
          </>
        )}
      </section>
      <PlanSection device={device} me={me} />
      <section aria-labelledby="s-devices">
        <h3 id="s-devices">Devices</h3>
        <PairDevice device={device} />
        <details class="join">
          <summary>Join with a code</summary>
          <p class="hint">Switch this device to another library. Its current library stays on the server but leaves this device.</p>
          <JoinForm device={device} onJoined={props.onClose} />
        </details>
      </section>
      <section aria-labelledby="s-keyboard">
        <h3 id="s-keyboard">Keyboard</h3>
        <label class="switch">
          <input
            type="checkbox"
            checked={shortcuts}
            aria-describedby="s-keyboard-hint"
            onChange={(e) => {
              setShortcutsOn(e.currentTarget.checked);
              setShortcuts(e.currentTarget.checked);
            }}
          />
          <span class="switch-track" aria-hidden="true" />
          Keyboard shortcuts
        </label>
        <p class="hint" id="s-keyboard-hint">
          Single keys like n, / and j act right away. Turn them off if they get in your way (this device only).
        </p>
      </section>
      <section aria-labelledby="s-theme">
        <h3 id="s-theme">Theme</h3>
        <fieldset class="segmented">
          <legend class="sr-only">Theme</legend>
          {(["light", "dark", "system"] as Theme[]).map((t) => (
            <label key={t} class={theme === t ? "on" : ""}>
              <input
                type="radio"
                name="theme"
                checked={theme === t}
                onChange={() => {
                  applyTheme(t);
                  setTheme(t);
                }}
              />
              {t === "system" ? "System" : t === "light" ? "Light" : "Dark"}
            </label>
          ))}
        </fieldset>
      </section>
      <section aria-labelledby="s-account">
        <h3 id="s-account">Account</h3>
        <p class="hint">{me?.isAnonymous === false ? `Signed in${me.email ? ` as ${me.email}` : ""}.` : "This library has no email or password: pair a device to use it elsewhere."}</p>
        <button type="button" class="danger" onClick={signOut}>
          Sign out
        </button>
      </section>
      {error && <p class="error-text">{error}</p>}
    </Dialog>
  );
}
