import assert from "node:assert/strict";
import { test } from "node:test";
import type { ApiKeyEntry } from "./key-store.js";
import { isQuotaDenial, KeyQuota, QuotaBook, type QuotaDenial, type QuotaLease, TokenBucket } from "./rate-limits.js";

function fakeClock(): { now(): number; t: number } {
  return {
    t: 0,
    now() {
      return this.t;
    },
  };
}

function entry(name: string, limits: Partial<ApiKeyEntry> = {}): ApiKeyEntry {
  return {
    name,
    requestsPerMinute: undefined,
    tokensPerMinute: undefined,
    maxConcurrent: undefined,
    models: undefined,
    ...limits,
  };
}

function admitted(outcome: QuotaLease | QuotaDenial): QuotaLease {
  assert.ok(!isQuotaDenial(outcome), `refused: ${JSON.stringify(outcome)}`);
  return outcome;
}

function refused(outcome: QuotaLease | QuotaDenial): QuotaDenial {
  assert.ok(isQuotaDenial(outcome), "admitted, expected a refusal");
  return outcome;
}

test("a bucket refills its capacity per minute, linearly, and never above it", () => {
  const bucket = new TokenBucket(120, 0);
  bucket.take(120, 0);
  assert.equal(bucket.level(0), 0);
  assert.equal(bucket.level(15_000), 30); // a quarter minute of 120/min
  assert.equal(bucket.msUntil(60, 15_000), 15_000); // 30 more at 2 per second
  assert.equal(bucket.level(600_000), 120);
});

test("requests per minute: the third of 2/min waits 30 s, less as time passes", () => {
  const clock = fakeClock();
  const quota = new KeyQuota(entry("a", { requestsPerMinute: 2 }), clock);
  admitted(quota.admit()).release();
  admitted(quota.admit()).release();
  assert.deepEqual(refused(quota.admit()), { limit: "requests_per_minute", allowed: 2, retryAfterSeconds: 30 });
  clock.t = 10_000; // one third of a request back: two thirds missing at one per 30 s
  assert.equal(refused(quota.admit()).retryAfterSeconds, 20);
  clock.t = 30_000;
  admitted(quota.admit());
});

test("tokens per minute: a request is refused only once the budget is spent, and the overdraft is waited out", () => {
  const clock = fakeClock();
  const quota = new KeyQuota(entry("a", { tokensPerMinute: 100 }), clock);
  const first = admitted(quota.admit());
  admitted(quota.admit()).release(); // 100 tokens left: still admitted
  first.debit(150); // 100 - 150 = -50
  first.release();
  // 51 tokens short of 1, at 100 per 60 s: 30.6 s, rounded up
  assert.deepEqual(refused(quota.admit()), { limit: "tokens_per_minute", allowed: 100, retryAfterSeconds: 31 });
  clock.t = 30_000; // -50 + 50 = 0: still spent
  assert.equal(refused(quota.admit()).limit, "tokens_per_minute");
  clock.t = 31_000; // -50 + 51.67
  admitted(quota.admit());
});

test("max concurrent counts leases in flight; releasing twice frees one slot", () => {
  const quota = new KeyQuota(entry("a", { maxConcurrent: 1 }), fakeClock());
  const lease = admitted(quota.admit());
  assert.deepEqual(refused(quota.admit()), { limit: "max_concurrent", allowed: 1, retryAfterSeconds: 1 });
  lease.release();
  lease.release();
  assert.equal(quota.inflight, 0);
  admitted(quota.admit());
  refused(quota.admit());
});

test("a refused request spends nothing of the other limits", () => {
  const quota = new KeyQuota(entry("a", { requestsPerMinute: 2, maxConcurrent: 1 }), fakeClock());
  const first = admitted(quota.admit()); // 1 request left
  assert.equal(refused(quota.admit()).limit, "max_concurrent"); // must not take the last request
  first.release();
  admitted(quota.admit());
});

test("new limits keep what was used; a limit taken away no longer refuses", () => {
  const clock = fakeClock();
  const quota = new KeyQuota(entry("a", { requestsPerMinute: 2 }), clock);
  admitted(quota.admit());
  admitted(quota.admit());
  quota.update(entry("a", { requestsPerMinute: 4 }));
  // still 0 left, now at 4 per minute: 15 s to the next
  assert.deepEqual(refused(quota.admit()), { limit: "requests_per_minute", allowed: 4, retryAfterSeconds: 15 });
  quota.update(entry("a"));
  admitted(quota.admit());
});

test("the book keeps a kept name's usage across a sync and forgets a dropped one", () => {
  const book = new QuotaBook([entry("a", { requestsPerMinute: 1 }), entry("b", { requestsPerMinute: 1 })], fakeClock());
  admitted(book.get("a")!.admit());
  admitted(book.get("b")!.admit());
  book.sync([entry("a", { requestsPerMinute: 1 })]);
  assert.equal(book.get("b"), undefined);
  refused(book.get("a")!.admit());
  book.sync([entry("a", { requestsPerMinute: 1 }), entry("b", { requestsPerMinute: 1 })]);
  admitted(book.get("b")!.admit()); // fresh
});
