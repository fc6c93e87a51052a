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

test("a second's finished requests go out as one report; idle seconds send nothing; close sends the rest", async () => {
  const clock = new VirtualClock();
  const events = new MemoryEventPlane();
  const received: unknown[] = [];
  events.subscribe(subjects.allTrafficReports, (payload, subject) => received.push({ subject, payload }));
  const reporter = new TrafficReporter({ frontendId: "frontend-1", events, clock, logger: silentLogger });

  reporter.record(finished({ inputTokens: 100, cachedTokens: 50, outputTokens: 10, ttftMs: 40, itlMs: 5 }));
  reporter.record(finished({ inputTokens: 300, cachedTokens: 400, outputTokens: 20, ttftMs: 80, itlMs: 7 }));
  reporter.record(finished({ inputTokens: 200, outputTokens: 1, ttftMs: 60, itlMs: undefined }));
  reporter.record(finished({ status: "error", inputTokens: 999, ttftMs: undefined, itlMs: undefined }));
  await clock.advance(1000);
  await clock.advance(3000);
  reporter.record(finished({ outputTokens: 0, ttftMs: undefined, itlMs: undefined }));
  await reporter.close();
  await new Promise((r) => setImmediate(r));

  const first = {
    type: "traffic-report",
    frontendId: "frontend-1",
    requests: 3,
    inputTokens: 600,
    outputTokens: 31,
    // The second request's 400 cached tokens count as its 300 prompt tokens.
    cachedTokens: 350,
    ttftMsSum: 180,
    ttftCount: 3,
    itlMsSum: 12,
    itlCount: 2,
  };
  const last = { ...first, requests: 1, inputTokens: 100, outputTokens: 0, cachedTokens: 0 };
  Object.assign(last, { ttftMsSum: 0, ttftCount: 0, itlMsSum: 0, itlCount: 0 });
  assert.deepEqual(received, [
    { subject: "armature.traffic.frontend-1", payload: first },
    { subject: "armature.traffic.frontend-1", payload: last },
  ]);
  for (const r of received) trafficReportSchema.parse((r as { payload: unknown }).payload);
  assert.equal(clock.pendingTimers, 0, "close stopped the timer");
  reporter.record(finished({}));
  await clock.advance(5000);
  assert.equal(received.length, 2, "nothing after close");
});
