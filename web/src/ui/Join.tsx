import { useState } from "preact/hooks";
import { ApiError } from "../api.ts";
import type { Device } from "../app.ts";

export function JoinForm(props: { device: Device; onJoined?: () => void }) {
  const [code, setCode] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.device.join(code);
      props.onJoined?.();
    } catch (e) {
      if (e instanceof ApiError && e.code === "invalid-pairing-code") setError("That code doesn't work. Codes work once and for 5 minutes.");
      else if (e instanceof ApiError && e.code === "rate-limited") setError("Too many tries. Wait a minute and try again.");
      else setError(e instanceof ApiError ? e.message : "You're offline. Joining needs a connection.");
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="join-form" onSubmit={submit}>
      <label for="pairing-code">Pairing code</label>
      <input
        id="pairing-code"
        value={code}
        autoComplete="off"
        autoCapitalize="characters"
        spellcheck={false}
        maxLength={20}
        placeholder="XXXX-XXXX"
        onInput={(e) => setCode(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy || !code.trim()}>
        Join library
      </button>
      {error && (
        <p class="error-text" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
