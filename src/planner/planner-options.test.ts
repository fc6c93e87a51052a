import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { ArmatureError } from "../protocol/index.js";
import { compilePlannerOptions, type PlannerOptions, parseProfile } from "./index.js";

const profile = parseProfile(readFileSync(new URL("./fixtures/tiny-profile.json", import.meta.url), "utf8"), "tiny-profile.json");

function refused(options: PlannerOptions, message: string): void {
  assert.throws(
    () => compilePlannerOptions(options),
    (error: unknown) => {
      assert.ok(error instanceof ArmatureError);
      assert.equal(error.code, "CONFIG_INVALID");
      assert.ok(error.message.includes(message), error.message);
      return true;
    },
  );
}

test("defaults: Dynamo's targets, budget and intervals, the load mode, and the kalman predictor", () => {
  assert.deepEqual(compilePlannerOptions(), {
    mode: "load",
    layout: "aggregated",
    sloTtftMs: 500,
    sloItlMs: 50,
    minWorkers: 1,
    // armature's own: ten minutes idle before a pool with --min-workers 0 drains its last worker.
    scaleToZeroAfterSeconds: 600,
    maxWorkers: 8,
    // armature's own (Dynamo's is 180): on the replays of docs/benchmarks.md 60 s met the targets on a
    // step load that 180 s missed, on fewer worker-seconds on each shape.
    intervalSeconds: 60,
    loadIntervalSeconds: 5,
    predictor: "kalman",
    predictorOptions: {
      movingAverageWindow: 5,
      kalman: { qLevel: 1.0, qTrend: 0.1, r: 10.0, initialVariance: 1000 },
      holtWinters: undefined,
    },
    // armature's own: a period found in the request rate is provisioned ahead (docs/planner.md).
    recurrence: { kind: "auto" },
    cooldownSeconds: 30,
    scaleUpThreshold: 1.0,
    scaleDownThreshold: 0.8,
    advisory: false,
    // armature's own: the quantile the replays of docs/planner.md chose (Dynamo judges a mean).
    latencyQuantile: 0.9,
    profile: undefined,
  });
  // An option given as undefined takes its default.
  assert.equal(compilePlannerOptions({ sloTtftMs: undefined }).sloTtftMs, 500);
});

test("holt-winters gets a season of one day of intervals unless one is given", () => {
  // 86400 s / 60 s = 1440 intervals; / 600 s = 144.
  assert.equal(compilePlannerOptions({ predictor: "holt-winters" }).predictorOptions.holtWinters?.seasonLength, 1440);
  assert.equal(
    compilePlannerOptions({ predictor: "holt-winters", intervalSeconds: 600 }).predictorOptions.holtWinters?.seasonLength,
    144,
  );
  const given = compilePlannerOptions({ predictor: "holt-winters", predictorOptions: { holtWinters: { seasonLength: 7 } } });
  assert.deepEqual(given.predictorOptions.holtWinters, { seasonLength: 7, alpha: 0.5, beta: 0.1, gamma: 0.3 });
});

test("--predictor-period: auto, off, or a whole number of intervals of at least two", () => {
  assert.deepEqual(compilePlannerOptions({ predictorPeriod: "off" }).recurrence, { kind: "off" });
  // 600 s at the default 60-s interval: 10 readings; 1,200 s at 600 s: 2.
  assert.deepEqual(compilePlannerOptions({ predictorPeriod: 600 }).recurrence, { kind: "fixed", readings: 10 });
  assert.deepEqual(compilePlannerOptions({ predictorPeriod: 1200, intervalSeconds: 600 }).recurrence, {
    kind: "fixed",
    readings: 2,
  });
  refused(
    { predictorPeriod: 90 },
    "--predictor-period (90 s) must be a whole number of at least two --planner-interval periods (60 s)",
  );
  refused({ predictorPeriod: 60 }, "--predictor-period (60 s) must be a whole number of at least two");
  // 1,440 readings are kept: a day at 60 s; a week would never repeat within them.
  assert.deepEqual(compilePlannerOptions({ predictorPeriod: 86_400 }).recurrence, { kind: "fixed", readings: 1440 });
  refused(
    { predictorPeriod: 604_800 },
    "--predictor-period (604800 s) is 10080 --planner-interval periods; at most 1440 readings are kept, so a period can be at most 86400 s",
  );
  refused({ predictorPeriod: -600 }, "--predictor-period must be auto, off or a period in seconds, got -600");
  refused({ predictorPeriod: "daily" as "auto" }, '--predictor-period must be auto, off or a period in seconds, got "daily"');
});

test("worker bounds are refused naming their flags", () => {
  refused({ minWorkers: 5, maxWorkers: 3 }, "--min-workers (5) is above --max-workers (3)");
  refused(
    { layout: "disaggregated", minWorkers: 3, maxWorkers: 5 },
    "--min-workers (3) for each of the prefill and decode pools needs 6 workers, above --max-workers (5)",
  );
  refused({ minWorkers: -1 }, "--min-workers must be a whole number ≥ 0, got -1");
  refused(
    { layout: "disaggregated", minWorkers: 0 },
    "--min-workers 0 (scale to zero) is for aggregated pools; give the prefill and decode pools at least 1 each",
  );
  refused(
    { scaleToZeroAfterSeconds: 60 },
    "--scale-to-zero-after applies to pools that may reach zero workers; it needs --min-workers 0, got 1",
  );
  refused({ minWorkers: 0, scaleToZeroAfterSeconds: 0 }, "--scale-to-zero-after must be a positive number (seconds), got 0");
  assert.equal(compilePlannerOptions({ minWorkers: 0, scaleToZeroAfterSeconds: 60 }).scaleToZeroAfterSeconds, 60);
  refused({ maxWorkers: 2.5 }, "--max-workers must be a whole number ≥ 1, got 2.5");
});

test("targets, intervals and thresholds are refused naming their flags", () => {
  refused({ sloTtftMs: 0 }, "--slo-ttft must be a positive number (milliseconds), got 0");
  refused({ sloItlMs: Number.NaN }, "--slo-itl must be a positive number (milliseconds)");
  refused({ intervalSeconds: -1 }, "--planner-interval must be a positive number (seconds), got -1");
  refused({ intervalSeconds: 5 }, "--planner-load-interval (5 s) must be shorter than --planner-interval (5 s)");
  refused({ cooldownSeconds: -1 }, "--planner-cooldown must be a number ≥ 0 (seconds), got -1");
  refused({ latencyQuantile: 1 }, "--planner-quantile (1) must be below 1, e.g. 0.9");
  refused({ latencyQuantile: 0 }, "--planner-quantile must be a positive number (a quantile), got 0");
  refused({ scaleDownThreshold: 1.0 }, "--planner-down-threshold (1) must be below --planner-up-threshold (1)");
  refused({ mode: "fast" as never }, '--planner must be load or sla, got "fast"');
  refused({ layout: "split" as never }, '--planner-layout must be aggregated or disaggregated, got "split"');
});

test("an unknown predictor is refused with the names; bad predictor options by their path", () => {
  refused(
    { predictor: "prophet" },
    '--predictor "prophet" is not a predictor; use one of constant, moving-average, kalman, holt-winters',
  );
  refused({ predictorOptions: { kalman: { qTrend: -1 } } }, "predictorOptions.kalman.qTrend must be a positive number, got -1");
});

test("the sla mode needs a profile", () => {
  refused({ mode: "sla" }, "--profile is required with --planner sla");
  const compiled = compilePlannerOptions({ mode: "sla", profile });
  assert.equal(compiled.profile, profile);
});
