import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { PrometheusMeter, silentLogger } from "../observability/index.js";
import type { WorkerRole } from "../protocol/index.js";
import { VirtualClock } from "../runtime/index.js";
import { VirtualConnector } from "./connectors/virtual-connector.js";
import type { IntervalLoad } from "./interval-load.js";
import type { WorkerLatencyEstimate } from "./latency-estimate.js";
import { LiveLatency } from "./live-latency.js";
import { Planner, type PlannerDecisionRecord } from "./planner.js";
import { compilePlannerOptions, type PlannerOptions } from "./planner-options.js";
import { parseProfile } from "./profile.js";

const profile = parseProfile(readFileSync(new URL("./fixtures/tiny-profile.json", import.meta.url), "utf8"), "tiny-profile.json");

const NO_TRAFFIC: IntervalLoad = { requestsPerSecond: 0, meanInputTokens: 0, meanOutputTokens: 0, kvHitRate: 0 };

/** A planner over one aggregated pool of `w0`, on a virtual clock; `more` adds signals or deps. */
async function setup(
  options: PlannerOptions,
  traffic: IntervalLoad,
  estimate: WorkerLatencyEstimate,
  more: { idleMs?: (nowMs: number) => number; acting?: () => boolean } = {},
) {
  const clock = new VirtualClock();
  let next = 0;
  const connector = await VirtualConnector.create({
    clock,
    roles: ["aggregated"],
    startupDelayMs: 0,
    initialWorkers: { aggregated: ["w0"] },
    workers: {
      addWorker: () => `w${++next}`,
      drainWorker: async () => {},
      removeWorker: () => {},
    },
  });
  const meter = new PrometheusMeter();
  const decisions: PlannerDecisionRecord[] = [];
  const planner = Planner.start({
    options: compilePlannerOptions(options),
    clock,
    connector,
    meter,
    logger: silentLogger,
    signals: { takeInterval: () => traffic, estimates: () => [estimate], ...(more.idleMs ? { idleMs: more.idleMs } : {}) },
    onDecision: (d) => decisions.push(d),
    acting: more.acting,
  });
  const desired = async (role: WorkerRole = "aggregated") => (await connector.replicas(role)).desired;
  return { clock, planner, meter, decisions, desired, close: () => Promise.all([planner.close(), connector.close()]) };
}

const quiet: WorkerLatencyEstimate = { ttftMs: 450, itlMs: 45 };

test("the throughput loop sizes the pool from the profile and raises it to that floor at once", async () => {
  // 10 req/s of 1,000 prompt and 100 output tokens, no KV hits, constant predictor (the next
  // interval is this one). From the tiny profile: prefill 1,000 tokens at 10,000 tokens/s →
  // 10 × 1,000 / 10,000 = 1.0 worker. Decode at context 1,000 + 100 / 2 = 1,050, where each running
  // sequence adds the 100-ms prefill of a request ÷ 100 output tokens = 1 ms to every step: ITL at
  // 16 sequences 20 + 12 × 50 / 2,000 + 16 = 36.3 ms, at 64 40 + 24 × 50 / 2,000 + 64 = 104.6 ms;
  // 50 ms lies between: c* = 16 + 48 × 13.7 / 68.3, at 792.5 × (1 + 13.7 / 68.3) = 951.5 tokens/s
  // → 10 × 100 / 951.5 = 1.051 workers. Aggregated: ⌈1.0 + 1.051⌉ = 3 workers.
  const traffic = { requestsPerSecond: 10, meanInputTokens: 1000, meanOutputTokens: 100, kvHitRate: 0 };
  const { clock, planner, meter, decisions, desired, close } = await setup(
    { mode: "sla", profile, predictor: "constant", intervalSeconds: 60, loadIntervalSeconds: 10, sloTtftMs: 500, sloItlMs: 50 },
    traffic,
    quiet,
  );
  try {
    assert.equal(await desired(), 1);
    await clock.advance(60_000);
    assert.equal(await desired(), 3);
    const floor = decisions.find((d) => d.loop === "throughput");
    assert.deepEqual([floor?.from, floor?.to, floor?.action, floor?.applied], [1, 3, "floor", true]);
    const state = planner.state();
    assert.deepEqual(state.predicted, traffic);
    assert.equal(state.pools.aggregated?.floor, 3);
    const metrics = await meter.render();
    assert.match(metrics, /armature_planner_desired_workers\{pool="aggregated",model=""\} 3/);
    assert.match(metrics, /armature_planner_predicted_load\{quantity="requests_per_second",model=""\} 10/);
    assert.match(
      metrics,
      /armature_planner_decisions_total\{pool="aggregated",loop="throughput",action="floor",applied="true",model=""\} 1/,
    );
  } finally {
    await close();
  }
});

test("a burst that recurs is provisioned at the decision before it; with --predictor-period off only after", async () => {
  // Readings of 60 s: 1 req/s, with 10 req/s at readings 10 and 20 (0-based), 1,000 prompt and 100
  // output tokens. From the tiny profile (the worked example above): 10 req/s needs 3 workers,
  // 1 req/s one (prefill 1,000 / 10,000 = 0.1, decode 100 / 951.5 = 0.105: ⌈0.205⌉). The constant
  // predictor repeats the last reading, so without a period the floor rises only after a burst.
  // With one, the tick at 30 min (reading 29 observed) sees reading 30 repeat readings 20 and 10.
  const floorAt30Minutes = async (predictorPeriod: "auto" | "off") => {
    const traffic = { requestsPerSecond: 1, meanInputTokens: 1000, meanOutputTokens: 100, kvHitRate: 0 };
    const run = await setup(
      {
        mode: "sla",
        profile,
        predictor: "constant",
        predictorPeriod,
        intervalSeconds: 60,
        loadIntervalSeconds: 10,
        sloTtftMs: 500,
        sloItlMs: 50,
        maxWorkers: 4,
      },
      traffic,
      quiet,
    );
    try {
      for (let reading = 0; reading <= 29; reading++) {
        traffic.requestsPerSecond = reading > 0 && reading % 10 === 0 ? 10 : 1;
        await run.clock.advance(60_000);
      }
      const state = run.planner.state();
      const metric = /^armature_planner_recurring_period_seconds\{model=""\} (\d+)$/m.exec(await run.meter.render())?.[1];
      return {
        floor: state.pools.aggregated?.floor,
        period: state.recurringPeriod,
        rate: state.predicted?.requestsPerSecond,
        metric: Number(metric),
      };
    } finally {
      await run.close();
    }
  };
  const auto = await floorAt30Minutes("auto");
  assert.equal(auto.rate, 10);
  assert.equal(auto.floor, 3);
  assert.equal(auto.period?.seconds, 600);
  assert.equal(auto.metric, 600);
  const off = await floorAt30Minutes("off");
  assert.deepEqual(off, { floor: 1, period: undefined, rate: 1, metric: 0 });
});

test("the load loop adds a worker when every estimate breaks the SLA, then waits out its cool-down", async () => {
  const { clock, decisions, desired, close } = await setup(
    { mode: "load", loadIntervalSeconds: 5, cooldownSeconds: 30, sloTtftMs: 500, sloItlMs: 50 },
    NO_TRAFFIC,
    { ttftMs: 900, itlMs: 30 },
  );
  try {
    await clock.advance(5_000);
    assert.equal(await desired(), 2);
    await clock.advance(25_000);
    assert.equal(await desired(), 2, "within the 30 s cool-down of the last change");
    await clock.advance(5_000);
    assert.equal(await desired(), 3);
    assert.deepEqual(
      decisions.filter((d) => d.action === "up").map((d) => [d.atMs, d.from, d.to]),
      [
        [5_000, 1, 2],
        [35_000, 2, 3],
      ],
    );
  } finally {
    await close();
  }
});

test("in advisory mode the planner decides and reports but changes nothing", async () => {
  const { clock, planner, desired, close } = await setup({ mode: "load", advisory: true, loadIntervalSeconds: 5 }, NO_TRAFFIC, {
    ttftMs: 900,
    itlMs: 30,
  });
  try {
    await clock.advance(20_000);
    assert.equal(await desired(), 1);
    const ups = planner.state().decisions.filter((d) => d.action === "up");
    assert.ok(ups.length >= 1);
    assert.ok(ups.every((d) => !d.applied));
  } finally {
    await close();
  }
});

test("--min-workers 0: the pool drains its last worker after --scale-to-zero-after idle, and a request's arrival wakes one at once", async () => {
  const live = new LiveLatency(30_000, 0.9);
  const { clock, planner, decisions, desired, close } = await setup(
    { minWorkers: 0, scaleToZeroAfterSeconds: 60, loadIntervalSeconds: 5, cooldownSeconds: 30 },
    NO_TRAFFIC,
    { ttftMs: 0, itlMs: 0 },
    { idleMs: (now) => live.idleMs(now, 0) },
  );
  try {
    // A request from 10 s to 20 s: idle from 20 s, so the pool holds one worker until 80 s.
    await clock.advance(10_000);
    const request = live.begin(10_000);
    await clock.advance(10_000);
    request.end(20_000);
    await clock.advance(55_000);
    assert.equal(await desired(), 1, "idle 55 s of 60");
    await clock.advance(10_000);
    assert.equal(await desired(), 0, "idle 60 s and more: none");
    const down = decisions.find((d) => d.to === 0);
    assert.deepEqual([down?.atMs, down?.from, down?.action], [80_000, 1, "down"]);
    // Idle on: it stays at none, tick after tick.
    await clock.advance(60_000);
    assert.equal(await desired(), 0);
    // A request arrives between ticks: one worker at once, not at the next tick.
    live.begin(clock.now() + 1000);
    await clock.advance(1000);
    assert.equal(planner.wake(), true, "a cold start: the request waits for the worker's start-up");
    await clock.advance(0);
    assert.equal(await desired(), 1);
    assert.equal(planner.wake(), true, "still cold: the worker has not been seen ready");
    const up = decisions.at(-1);
    assert.deepEqual(
      [up?.atMs, up?.from, up?.to, up?.action, up?.reason],
      [146_000, 0, 1, "up", "a request arrived at a pool scaled to zero"],
    );
    // While it runs, the pool never goes back to none; once a tick has seen it ready, arrivals are warm.
    await clock.advance(120_000);
    assert.equal(await desired(), 1);
    assert.equal(planner.wake(), false);
  } finally {
    await close();
  }
});

test("a planner standing by decides and reports, and changes nothing until it acts", async () => {
  let acting = false;
  const { clock, decisions, desired, close } = await setup(
    { loadIntervalSeconds: 5, cooldownSeconds: 0 },
    NO_TRAFFIC,
    { ttftMs: 900, itlMs: 30 },
    { acting: () => acting },
  );
  try {
    await clock.advance(5000);
    assert.equal(await desired(), 1);
    assert.deepEqual(
      [decisions[0]?.to, decisions[0]?.applied, decisions[0]?.reason.endsWith("; standby: another planner acts")],
      [2, false, true],
    );
    acting = true;
    await clock.advance(5000);
    assert.equal(await desired(), 2);
    assert.equal(decisions.at(-1)?.applied, true);
  } finally {
    await close();
  }
});
