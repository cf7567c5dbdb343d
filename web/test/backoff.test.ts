import assert from "node:assert/strict";
import { test } from "node:test";
import { backoffMs } from "../src/backoff.ts";

test("reconnect delays double from about a second, with jitter, and stop growing at 30 s", () => {
  assert.equal(backoffMs(0, () => 0), 500);
  assert.equal(backoffMs(0, () => 1), 1000);
  assert.equal(backoffMs(3, () => 1), 8000);
  assert.equal(backoffMs(20, () => 1), 30_000);
  assert.equal(backoffMs(20, () => 0), 15_000);
});
