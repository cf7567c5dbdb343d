import assert from "node:assert/strict";
import { test } from "node:test";
import { planLineWithoutUse, quotaLine, resetDay } from "../src/quota.ts";

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
