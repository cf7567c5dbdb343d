import assert from "node:assert/strict";
import { test } from "node:test";
import { isPaused, pauseMessage, planLineWithoutUse, quotaLine, quotaRefusal, resetDate, resetDay } from "../src/quota.ts";

const free = {
  plan: "free" as const,
  monthlyLimit: 200,
  usedThisMonth: 12,
  remainingThisMonth: 188,
  resetsAt: "2026-12-01T00:00:00Z",
  perMinuteLimit: 5,
};

test("a free user sees how much of the month's allowance is used and when it resets", () => {
  assert.equal(quotaLine(free), "Free plan · 12 of 200 enrichments used this month · resets 1 Dec");
  assert.equal(quotaLine({ ...free, usedThisMonth: 200, remainingThisMonth: 0 }), "Free plan · 200 of 200 enrichments used this month · resets 1 Dec");
});

test("Pro has no figure: unlimited", () => {
  const pro = { ...free, plan: "pro" as const, monthlyLimit: null, remainingThisMonth: null, perMinuteLimit: null, usedThisMonth: 0 };
  assert.equal(quotaLine(pro), "Pro plan · unlimited enrichment");
  assert.equal(planLineWithoutUse(true), "Pro plan · unlimited enrichment");
  assert.equal(planLineWithoutUse(false), "Free plan");
});

test("the reset day is the UTC date, whatever the local time zone", () => {
  process.env.TZ = "America/Los_Angeles"; // there, midnight UTC on the 1st is still the last day of the month
  assert.equal(resetDay("2027-01-01T00:00:00Z"), "1 Jan");
  assert.equal(resetDay("2026-12-01T00:00:00+00:00"), "1 Dec");
  assert.equal(resetDay("not a date"), "the 1st");
});

test("automatic enrichment pauses until the month resets when the month's allowance is used", () => {
  const now = Date.parse("2026-11-20T10:00:00Z");
  const usedUp = { ...free, usedThisMonth: 200, remainingThisMonth: 0 };
  assert.deepEqual(quotaRefusal(usedUp, 60, now), { pause: { until: "2026-12-01T00:00:00Z", dismissed: false } });
  // The per-minute limit is no pause: that link is asked for again after Retry-After.
  assert.deepEqual(quotaRefusal(free, 12, now), { retryInSeconds: 12 });
  assert.deepEqual(quotaRefusal(free, null, now), { retryInSeconds: 60 });
  // Without the figure, a wait of days can only be the month's.
  const days = 10 * 86400 + 14 * 3600;
  assert.deepEqual(quotaRefusal(null, days, now), { pause: { until: "2026-12-01T00:00:00.000Z", dismissed: false } });
  assert.deepEqual(quotaRefusal(null, 30, now), { retryInSeconds: 30 });
});

test("a pause lasts until its reset time, and says when in words", () => {
  const pause = { until: "2026-12-01T00:00:00Z", dismissed: false };
  assert.equal(isPaused(pause, Date.parse("2026-11-30T23:59:59Z")), true);
  assert.equal(isPaused(pause, Date.parse("2026-12-01T00:00:00Z")), false);
  assert.equal(isPaused(null, Date.now()), false);
  assert.equal(isPaused({ until: "garbage", dismissed: false }, Date.now()), false);
  assert.equal(pauseMessage(pause), "You've used this month's AI enrichments. New links will be enriched again on 1 December.");
  process.env.TZ = "America/Los_Angeles";
  assert.equal(resetDate("2027-01-01T00:00:00Z"), "1 January");
});
