import { EXPIRY_SKEW_SECONDS } from "./config.ts";

function claims(token: string): Record<string, unknown> {
  const payload = token.split(".")[1];
  if (!payload) return {};
  try {
    const base64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const parsed: unknown = JSON.parse(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4)));
    return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Whether the token's `exp` (read without verification) is close enough to refresh ahead of time.
 * The margin is at most a tenth of the token's life, so very short-lived tokens are not refreshed
 * before every request. A token without `exp` is used until the server refuses it. */
export function isNearlyExpired(token: string, nowSeconds: number): boolean {
  const { exp, iat } = claims(token);
  if (typeof exp !== "number") return false;
  const life = typeof iat === "number" && exp > iat ? exp - iat : Infinity;
  return exp - Math.min(EXPIRY_SKEW_SECONDS, life / 10) <= nowSeconds;
}
