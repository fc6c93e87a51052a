import assert from "node:assert/strict";
import { test } from "node:test";
import type { FinishedRequestTimings } from "../frontend/index.js";
import { silentLogger } from "../observability/index.js";
import { subjects, trafficReportSchema } from "../protocol/index.js";
import { MemoryEventPlane, VirtualClock } from "../runtime/index.js";
import { TrafficReporter } from "./traffic-reporter.js";

const finished = (overrides: Partial<FinishedRequestTimings>): FinishedRequestTimings => ({
  endpoint: "completions",
  requestType: "stream",
  status: "success",
  model: "m",
  inputTokens: 100,
  outputTokens: 10,
  cachedTokens: 0,
  ttftMs: 40,
  itlMs: 5,
  ...overrides,
});

test("a second's arrivals and finished requests go out as one report; idle seconds send nothing; close sends the rest", async () => {
  const clock = new VirtualClock();
  const events = new MemoryEventPlane();
  const received: unknown[] = [];
  events.subscribe(subjects.allTrafficReports, (payload, subject) => received.push({ subject, payload }));
  const reporter = new TrafficReporter({ frontendId: "frontend-1", events, clock, logger: silentLogger });

  for (let k = 0; k < 5; k++) reporter.arrived();
  reporter.record(finished({ inputTokens: 100, cachedTokens: 50, outputTokens: 10, ttftMs: 40, itlMs: 5 }));
  reporter.record(finished({ inputTokens: 300, cachedTokens: 400, outputTokens: 20, ttftMs: 80, itlMs: 7 }));
  reporter.record(finished({ inputTokens: 200, outputTokens: 1, ttftMs: 60, itlMs: undefined }));
  reporter.record(finished({ status: "error", inputTokens: 999, ttftMs: undefined, itlMs: undefined }));
  await clock.advance(1000);
  // A second in which requests arrived and none finished is reported too: the planner reads the demand.
  reporter.arrived();
  reporter.arrived();
  await clock.advance(1000);
  await clock.advance(3000);
  reporter.record(finished({ outputTokens: 0, ttftMs: undefined, itlMs: undefined }));
  await reporter.close();
  await new Promise((r) => setImmediate(r));

  const first = {
    type: "traffic-report",
    frontendId: "frontend-1",
    requests: 3,
    arrivals: 5,
    inputTokens: 600,
    outputTokens: 31,
    // The second request's 400 cached tokens count as its 300 prompt tokens.
    cachedTokens: 350,
    ttftMsSum: 180,
    ttftCount: 3,
    itlMsSum: 12,
    itlCount: 2,
  };
  const noLatencies = { ttftMsSum: 0, ttftCount: 0, itlMsSum: 0, itlCount: 0 };
  const arrivalsOnly = { ...first, requests: 0, arrivals: 2, inputTokens: 0, outputTokens: 0, cachedTokens: 0, ...noLatencies };
  const last = { ...first, requests: 1, arrivals: 0, inputTokens: 100, outputTokens: 0, cachedTokens: 0, ...noLatencies };
  assert.deepEqual(received, [
    { subject: "armature.traffic.frontend-1", payload: first },
    { subject: "armature.traffic.frontend-1", payload: arrivalsOnly },
    { subject: "armature.traffic.frontend-1", payload: last },
  ]);
  for (const r of received) trafficReportSchema.parse((r as { payload: unknown }).payload);
  assert.equal(clock.pendingTimers, 0, "close stopped the timer");
  reporter.record(finished({}));
  await clock.advance(5000);
  assert.equal(received.length, 3, "nothing after close");
});

test("per-worker sums: a TTFT counts where the request was prefilled, an ITL where it was decoded; the schema holds them to the report's counts", async () => {
  const clock = new VirtualClock();
  const events = new MemoryEventPlane();
  const received: Record<string, unknown>[] = [];
  events.subscribe(subjects.allTrafficReports, (payload) => received.push(payload as Record<string, unknown>));
  const reporter = new TrafficReporter({ frontendId: "f", events, clock, logger: silentLogger });
  reporter.record(finished({ workerId: "d1", ttftMs: 40, itlMs: 5 }));
  reporter.record(finished({ workerId: "d1", prefillWorkerId: "p1", ttftMs: 100, itlMs: 7 }));
  reporter.record(finished({ workerId: "d2", ttftMs: 60, itlMs: undefined }));
  // Unrouted (it failed over before a worker took it, say): in the pool-wide sums only.
  reporter.record(finished({ ttftMs: 30, itlMs: 3 }));
  await reporter.close();
  await new Promise((r) => setImmediate(r));
  assert.equal(received.length, 1);
  const report = trafficReportSchema.parse(received[0]);
  assert.deepEqual([report.ttftMsSum, report.ttftCount, report.itlMsSum, report.itlCount], [230, 4, 15, 3]);
  assert.deepEqual(report.workers, [
    { workerId: "d1", ttftMsSum: 40, ttftCount: 1, itlMsSum: 12, itlCount: 2 },
    { workerId: "p1", ttftMsSum: 100, ttftCount: 1, itlMsSum: 0, itlCount: 0 },
    { workerId: "d2", ttftMsSum: 60, ttftCount: 1, itlMsSum: 0, itlCount: 0 },
  ]);
  // A report whose workers claim more latencies than it counts is refused by name.
  const inflated = { ...received[0], workers: [{ workerId: "d1", ttftMsSum: 1, ttftCount: 5, itlMsSum: 0, itlCount: 0 }] };
  assert.throws(() => trafficReportSchema.parse(inflated), /workers.*their ttftCounts \(5\) must not exceed the report's \(4\)/);
});
