// Reconnect delays: exponential from about a second, half of it random (jitter), capped at 30 s.

const MAX_BACKOFF_MS = 30_000;

export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(attempt, 10));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
