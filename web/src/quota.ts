// The enrichment quota line in Settings, from GET /v1/enrichment/quota.

export interface QuotaUse {
  plan: "free" | "pro";
  monthlyLimit: number | null;
  usedThisMonth: number;
  remainingThisMonth: number | null;
  resetsAt: string;
  perMinuteLimit: number | null;
}

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
