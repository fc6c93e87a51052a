import assert from "node:assert/strict";
import { test } from "node:test";
import { TrafficWindow } from "./traffic-window.js";

test("an interval's rate, mean lengths and hit rate, hand-worked", () => {
  const window = new TrafficWindow(0, 30_000);
  // Over 4 s: three requests of 100/300/200 prompt tokens (50 + 150 + 0 cached), 10/20/30 output tokens.
  window.record(1000, { inputTokens: 100, outputTokens: 10, cachedTokens: 50, ttftMs: 40, itlMs: 5 });
  window.record(2000, { inputTokens: 300, outputTokens: 20, cachedTokens: 150, ttftMs: 80, itlMs: 7 });
  window.record(3000, { inputTokens: 200, outputTokens: 30, cachedTokens: 0, ttftMs: 60 });
  // 3 / 4 s = 0.75 req/s; 600 / 3 = 200 in; 60 / 3 = 20 out; 200 cached / 600 = 1/3.
  assert.deepEqual(window.takeInterval(4000), {
    requestsPerSecond: 0.75,
    meanInputTokens: 200,
    meanOutputTokens: 20,
    kvHitRate: 1 / 3,
  });
  // TTFT (40 + 80 + 60) / 3 = 60; ITL (5 + 7) / 2 = 6 (the third had one token).
  assert.deepEqual(window.measured(4000), { ttftMs: 60, itlMs: 6 });
  assert.deepEqual(window.takeInterval(6000), { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 });
  assert.equal(window.measured(40_000), undefined, "latencies older than 30 s are forgotten");
});

test("summaries (frontends' traffic reports) add up as the requests they sum would", () => {
  const window = new TrafficWindow(0, 30_000);
  // Two frontends' seconds: 2 requests (100 + 300 in, 50 + 150 cached, 10 + 20 out, TTFT 40 + 80,
  // ITL 5 + 7) and 1 request (200 in, none cached, 30 out, TTFT 90, one token so no ITL).
  window.recordSummary(1000, {
    requests: 2,
    inputTokens: 400,
    outputTokens: 30,
    cachedTokens: 200,
    ttftMsSum: 120,
    ttftCount: 2,
    itlMsSum: 12,
    itlCount: 2,
  });
  window.recordSummary(3000, {
    requests: 1,
    inputTokens: 200,
    outputTokens: 30,
    cachedTokens: 0,
    ttftMsSum: 90,
    ttftCount: 1,
    itlMsSum: 0,
    itlCount: 0,
  });
  // The same as the three requests of the test above: 0.75 req/s, 200 in, 20 out, hit rate 1/3.
  assert.deepEqual(window.takeInterval(4000), {
    requestsPerSecond: 0.75,
    meanInputTokens: 200,
    meanOutputTokens: 20,
    kvHitRate: 1 / 3,
  });
  // Weighted by request: TTFT (120 + 90) / 3 = 70, not the mean of the reports' means (60 + 90) / 2
  // = 75; ITL 12 / 2 = 6.
  assert.deepEqual(window.measured(4000), { ttftMs: 70, itlMs: 6 });
  // A summary with no finished request changes nothing.
  window.recordSummary(5000, {
    requests: 0,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    ttftMsSum: 0,
    ttftCount: 0,
    itlMsSum: 0,
    itlCount: 0,
  });
  assert.deepEqual(window.measured(32_000), { ttftMs: 90, itlMs: 0 }, "the first summary left the 30 s window");
  assert.equal(window.measured(33_001), undefined);
});

test("per worker: the mean of the latencies the window's reports credit to each worker, 0 for one they do not name", () => {
  const window = new TrafficWindow(0, 10_000);
  const report = (workers: { workerId: string; ttftMsSum: number; ttftCount: number; itlMsSum: number; itlCount: number }[]) => ({
    requests: 4,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    ttftMsSum: workers.reduce((a, w) => a + w.ttftMsSum, 0),
    ttftCount: workers.reduce((a, w) => a + w.ttftCount, 0),
    itlMsSum: workers.reduce((a, w) => a + w.itlMsSum, 0),
    itlCount: workers.reduce((a, w) => a + w.itlCount, 0),
    workers,
  });
  assert.equal(window.measuredPerWorker(0, ["a"]), undefined, "no report names a worker");
  window.recordSummary(1000, report([{ workerId: "a", ttftMsSum: 300, ttftCount: 2, itlMsSum: 40, itlCount: 2 }]));
  window.recordSummary(2000, report([{ workerId: "a", ttftMsSum: 600, ttftCount: 1, itlMsSum: 0, itlCount: 0 }]));
  window.recordSummary(2000, report([{ workerId: "b", ttftMsSum: 50, ttftCount: 1, itlMsSum: 10, itlCount: 1 }]));
  // a: (300 + 600) / 3 = 300 ms TTFT, 40 / 2 = 20 ms ITL; b: 50 and 10; c has room.
  assert.deepEqual(window.measuredPerWorker(2500, ["a", "b", "c"]), [
    { ttftMs: 300, itlMs: 20 },
    { ttftMs: 50, itlMs: 10 },
    { ttftMs: 0, itlMs: 0 },
  ]);
  // The report of 1 s leaves the 10 s window at 11 s: a is then 600 ms, no ITL.
  assert.deepEqual(window.measuredPerWorker(11_500, ["a"]), [{ ttftMs: 600, itlMs: 0 }]);
});

test("once arrivals are reported, the rate is theirs: an overloaded fleet finishing fewer requests than arrive reads the demand", () => {
  const window = new TrafficWindow(0);
  // Over 10 s, 50 requests arrive and 30 finish (the rest still queued): 5 req/s, not 3.
  for (let k = 0; k < 50; k++) window.arrived();
  for (let k = 0; k < 30; k++) window.record(k * 300, { inputTokens: 1000, outputTokens: 100, cachedTokens: 250 });
  // The lengths and hit rate are the finished requests': 1000 in, 100 out, 250 / 1000 cached.
  assert.deepEqual(window.takeInterval(10_000), {
    requestsPerSecond: 5,
    meanInputTokens: 1000,
    meanOutputTokens: 100,
    kvHitRate: 0.25,
  });
  // The next interval counts afresh: 4 arrivals over 4 s, none finished.
  for (let k = 0; k < 4; k++) window.arrived();
  assert.deepEqual(window.takeInterval(14_000), { requestsPerSecond: 1, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 });
});

test("frontends' reports carry their arrivals; a report without them (an older frontend) adds none", () => {
  const window = new TrafficWindow(0);
  const none = { inputTokens: 0, outputTokens: 0, cachedTokens: 0, ttftMsSum: 0, ttftCount: 0, itlMsSum: 0, itlCount: 0 };
  window.recordSummary(1000, { ...none, requests: 0, arrivals: 6 });
  window.recordSummary(2000, { ...none, requests: 2, arrivals: 4, inputTokens: 800, outputTokens: 40 });
  window.recordSummary(3000, { ...none, requests: 1, inputTokens: 100, outputTokens: 20 });
  // 10 arrivals over 5 s; lengths from the 3 finished: 900 / 3 in, 60 / 3 out.
  assert.deepEqual(window.takeInterval(5000), { requestsPerSecond: 2, meanInputTokens: 300, meanOutputTokens: 20, kvHitRate: 0 });
});
