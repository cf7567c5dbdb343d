// The enrichment quota line in Settings, from GET /v1/enrichment/quota.

import type { QuotaData } from "../../clients/shared/model.ts";

export type QuotaUse = QuotaData;

// Fixed names rather than the browser's locale: the quota resets on a UTC date, which this shows as is.
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** "1 Dec": the UTC day the allowance starts again (the server sends the first instant of the month). */
export function resetDay(resetsAt: string): string {
  const at = new Date(resetsAt);
  if (Number.isNaN(at.getTime())) return "the 1st";
  return `${at.getUTCDate()} ${MONTHS[at.getUTCMonth()]}`;
}

export function quotaLine(use: QuotaUse): string {
  if (use.plan === "pro" || use.monthlyLimit === null) return "Pro plan · unlimited enrichment";
  const noun = use.monthlyLimit === 1 ? "enrichment" : "enrichments";
  return `Free plan · ${use.usedThisMonth} of ${use.monthlyLimit} ${noun} used this month · resets ${resetDay(use.resetsAt)}`;
}

/** The line while the figure cannot be had: the plan as far as it is known, and why there is no number. */
export function planLineWithoutUse(isPro: boolean | undefined): string {
  return isPro ? "Pro plan · unlimited enrichment" : "Free plan";
}

// -- enrichment of new links, paused when the month's allowance is used up ------------------------

const MONTH_NAMES = [
  "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December",
];

/** A pause of automatic enrichment: until the allowance resets; ``dismissed`` once its notice was closed. */
export interface EnrichPause {
  until: string;
  dismissed: boolean;
}

/** "1 December": the UTC day the allowance starts again, in words. */
export function resetDate(resetsAt: string): string {
  const at = new Date(resetsAt);
  if (Number.isNaN(at.getTime())) return "the 1st of next month";
  return `${at.getUTCDate()} ${MONTH_NAMES[at.getUTCMonth()]}`;
}

/** The one notice shown when automatic enrichment pauses. */
export function pauseMessage(pause: EnrichPause): string {
  return `You've used this month's AI enrichments. New links will be enriched again on ${resetDate(pause.until)}.`;
}

// A refusal whose Retry-After is longer than this is the month's, not the minute's.
const MONTHLY_WAIT_SECONDS = 3600;

/**
 * What a quota refusal (429 quota-exceeded) of an automatic enqueue means. The month's allowance used
 * up: a pause until ``resetsAt`` (from GET /v1/enrichment/quota; failing that, from Retry-After). The
 * per-minute limit: no pause, that link waits ``retryAfter`` seconds and is asked for again.
 */
export function quotaRefusal(
  use: QuotaUse | null,
  retryAfter: number | null,
  now: number,
): { pause: EnrichPause } | { retryInSeconds: number } {
  const monthUsedUp = use ? use.remainingThisMonth === 0 : retryAfter !== null && retryAfter > MONTHLY_WAIT_SECONDS;
  if (monthUsedUp) {
    const until = use && !Number.isNaN(Date.parse(use.resetsAt)) ? use.resetsAt : new Date(now + (retryAfter ?? 0) * 1000).toISOString();
    return { pause: { until, dismissed: false } };
  }
  return { retryInSeconds: retryAfter ?? 60 };
}

/** Whether automatic enrichment is paused at ``now``. */
export function isPaused(pause: EnrichPause | null | undefined, now: number): boolean {
  if (!pause) return false;
  const until = Date.parse(pause.until);
  return !Number.isNaN(until) && now < until;
}
