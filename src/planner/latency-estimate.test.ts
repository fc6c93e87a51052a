import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { concurrencyAtKvUsage, estimateWorkerLatency, parseProfile } from "./index.js";

// The fixture: KV usage (1, 1000) 0.01, (16, 1000) 0.2, (64, 1000) 0.8, (1, 3000) 0.03, (16, 3000) 0.6, (64, 3000) 1.0.
const profile = parseProfile(readFileSync(new URL("./fixtures/tiny-profile.json", import.meta.url), "utf8"), "tiny-profile.json");
const load = { requestsPerSecond: 10, meanInputTokens: 2000, meanOutputTokens: 200, kvHitRate: 0.25 };

function near(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual}, expected ${expected}`);
}

test("TTFT: the queue drains at the profiled rate, then the request's own prefill runs", () => {
  // input′ = 2000 × 0.75 = 1500: TTFT 175 ms, 9000 tokens/s. 4500 queued tokens take 4500/9000 s = 500 ms.
  assert.equal(estimateWorkerLatency({ queuedPrefillTokens: 4500, kvUsage: 0 }, profile, load).ttftMs, 675);
  assert.equal(estimateWorkerLatency({ queuedPrefillTokens: 0, kvUsage: 0 }, profile, load).ttftMs, 175);
});

test("ITL: the concurrency whose profiled KV usage matches the reported usage", () => {
  // Context 2000 + 200/2 = 2100, v = 0.55. KV usage at 1: 0.01 + 0.55·0.02 = 0.021; at 16: 0.2 + 0.55·0.4 = 0.42;
  // at 64: 0.8 + 0.55·0.2 = 0.91. ITL at 1: 10 + 0.55·2.5 = 11.375; at 16: 26.6; at 64: 53.2.
  near(concurrencyAtKvUsage(profile, 2100, 0.42), 16);
  near(estimateWorkerLatency({ queuedPrefillTokens: 0, kvUsage: 0.42 }, profile, load).itlMs, 26.6);
  // 0.665 is halfway from 0.42 to 0.91: concurrency 40, ITL 26.6 + 0.5·(53.2 − 26.6) = 39.9.
  near(concurrencyAtKvUsage(profile, 2100, 0.665), 40);
  near(estimateWorkerLatency({ queuedPrefillTokens: 0, kvUsage: 0.665 }, profile, load).itlMs, 39.9);
  // Beyond the profiled usage: the edge concurrencies.
  near(estimateWorkerLatency({ queuedPrefillTokens: 0, kvUsage: 0.95 }, profile, load).itlMs, 53.2);
  near(estimateWorkerLatency({ queuedPrefillTokens: 0, kvUsage: 0 }, profile, load).itlMs, 11.375);
});
