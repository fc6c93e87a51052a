import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { FinishedRequestTimings } from "../frontend-metrics.js";
import { percentiles, RequestWindow } from "./request-window.js";

const START = 1_000_000; // a bucket boundary of the 5 s buckets

function finished(overrides: Partial<FinishedRequestTimings> = {}): FinishedRequestTimings {
  return {
    model: "m",
    endpoint: "completions",
    requestType: "unary",
    status: "success",
    ttftMs: undefined,
    itlMs: undefined,
    ...overrides,
  };
}

function windowAt(clock: { now: number }, options: { samplesPerBucket?: number; random?: () => number } = {}): RequestWindow {
  return new RequestWindow({ now: () => clock.now, ...options });
}

describe("percentiles (nearest rank)", () => {
  it("are the ⌈p·n⌉-th smallest values, null for none", () => {
    assert.equal(percentiles([]), null);
    assert.deepEqual(percentiles([40, 10, 30, 20]), { p50: 20, p90: 40, p99: 40 });
    assert.deepEqual(percentiles(Array.from({ length: 100 }, (_, i) => 100 - i)), { p50: 50, p90: 90, p99: 99 });
  });
});

describe("RequestWindow", () => {
  it("sums the last minute: rate over the time since start, latency percentiles, errors and cache shares", () => {
    const clock = { now: START };
    const window = windowAt(clock);
    clock.now = START + 2_000;
    for (const [i, ttft] of [10, 20, 30, 40].entries()) {
      window.recordFinished(
        finished({ ttftMs: ttft, itlMs: i + 1, outputTokens: 5, inputTokens: 100, cachedTokens: 50, hostCachedTokens: 20 }),
      );
    }
    window.recordFinished(finished({ status: "error", errorType: "internal", inputTokens: 100 }));
    clock.now = START + 4_000;
    const summary = window.summary();
    assert.equal(summary.requests, 5);
    assert.equal(summary.errors, 1);
    // 5 requests in the 4 s since the window started.
    assert.equal(summary.requestsPerSecond, 5 / 4);
    assert.equal(summary.outputTokensPerSecond, 20 / 4);
    assert.deepEqual(summary.ttftMs, { p50: 20, p90: 40, p99: 40 });
    assert.deepEqual(summary.itlMs, { p50: 2, p90: 4, p99: 4 });
    // Of the successful requests' 400 prompt tokens: 200 cached, 80 of them from lower tiers.
    assert.deepEqual(summary.cachedShare, { device: 120 / 400, lowerTiers: 80 / 400 });
  });

  it("forgets requests older than the summary's reach", () => {
    const clock = { now: START };
    const window = windowAt(clock);
    window.recordFinished(finished({ ttftMs: 5 }));
    clock.now = START + 61_000;
    window.recordFinished(finished({ ttftMs: 7 }));
    const summary = window.summary(60_000);
    assert.equal(summary.requests, 1);
    assert.deepEqual(summary.ttftMs, { p50: 7, p90: 7, p99: 7 });
  });

  it("tallies routing decisions per worker, the overlap share capped at the prompt, and keeps the newest first", () => {
    const clock = { now: START };
    const window = new RequestWindow({ now: () => clock.now, recentRoutes: 2 });
    const route = { model: "m", prefillWorkerId: undefined, promptTokens: 64, blockSize: 16 };
    window.recordRouted({ ...route, workerId: "a", overlapBlocks: 2 });
    window.recordRouted({ ...route, workerId: "a", overlapBlocks: undefined });
    window.recordRouted({ ...route, workerId: "b", overlapBlocks: 10, prefillWorkerId: "p" });
    const summary = window.summary();
    assert.equal(summary.routed, 3);
    // a: 32 of 64 tokens where the overlap was known; b: 160 tokens held, capped at its 64.
    assert.deepEqual(summary.byWorker, { a: { requests: 2, overlapShare: 0.5 }, b: { requests: 1, overlapShare: 1 } });
    assert.equal(summary.routerOverlapShare, (32 + 64) / 128);
    assert.deepEqual(
      window.recentRoutes().map((r) => [r.workerId, r.overlapBlocks]),
      [
        ["b", 10],
        ["a", undefined],
      ],
    );
  });

  it("gives one chart point per bucket since start, empty buckets at zero, the current one over its elapsed time", () => {
    const clock = { now: START };
    const window = windowAt(clock);
    clock.now = START + 1_000;
    for (let i = 0; i < 4; i++) window.recordFinished(finished({ ttftMs: 10 * (i + 1), outputTokens: 10 }));
    clock.now = START + 10_000;
    window.recordFinished(finished({ ttftMs: 3 }));
    clock.now = START + 12_000;
    const points = window.series();
    assert.deepEqual(
      points.map((p) => [p.t, p.requestsPerSecond, p.outputTokensPerSecond, p.ttftP50Ms, p.ttftP99Ms]),
      [
        [START / 1000, 4 / 5, 40 / 5, 20, 40],
        [START / 1000 + 5, 0, 0, null, null],
        [START / 1000 + 10, 1 / 2, 0, 3, 3],
      ],
    );
  });

  it("keeps at most samplesPerBucket latencies per bucket", () => {
    const clock = { now: START };
    // random() = 0: each value past the cap replaces the first kept one.
    const window = windowAt(clock, { samplesPerBucket: 2, random: () => 0 });
    for (let v = 1; v <= 10; v++) window.recordFinished(finished({ ttftMs: v }));
    assert.equal(window.summary().requests, 10);
    assert.deepEqual(window.summary().ttftMs, { p50: 2, p90: 10, p99: 10 });
  });
});
