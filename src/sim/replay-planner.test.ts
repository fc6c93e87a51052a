import assert from "node:assert/strict";
import { test } from "node:test";
import { compilePlannerOptions } from "../planner/index.js";
import { generateSyntheticTrace } from "../traces/index.js";
import { replay } from "./replay.js";
import { ReplayPlanner } from "./replay-planner.js";

// A step load: 1 req/s for 1 minute, 8 req/s for 2, 1 req/s for 2. With 2,048 KV blocks of 64
// tokens per worker, the mocker's decode step grows with KV usage (Dynamo's polynomial): about
// 7 ms at 1 req/s on one worker and about 15 ms at 8 req/s, so a 10 ms ITL target holds on one
// worker at the low rate and needs about three at the high one.
const trace = generateSyntheticTrace({
  shape: {
    kind: "step",
    steps: [
      { atSeconds: 0, rps: 1 },
      { atSeconds: 60, rps: 8 },
      { atSeconds: 180, rps: 1 },
    ],
  },
  durationSeconds: 300,
  seed: 3,
  inputMeanTokens: 2000,
  outputMeanTokens: 100,
  lengthSigma: 0,
});
const base = { trace, policy: "kv" as const, workers: 1, kvBlocks: 2048, blockSize: 64, seed: 5 };
const planner = () =>
  new ReplayPlanner(
    compilePlannerOptions({
      mode: "load",
      sloTtftMs: 2000,
      sloItlMs: 10,
      minWorkers: 1,
      maxWorkers: 4,
      loadIntervalSeconds: 5,
      cooldownSeconds: 15,
    }),
    { aggregated: 1 },
    15_000,
  );

let first: ReturnType<typeof withPlanner> | undefined;
/** One replay with the planner, shared by the tests that only read it. */
const planned = () => {
  first ??= withPlanner();
  return first;
};

async function withPlanner() {
  const p = planner();
  const result = await replay({ ...base, ...p.hooks });
  return { result, report: p.report(result.sim_seconds * 1000, result.requests) };
}

test("the load planner grows the pool for the step and shrinks it after, deterministically for a seed", async () => {
  const a = await planned();
  const b = await withPlanner();
  assert.deepEqual(a.report, b.report, "same trace and seed, same decisions");
  const { report } = a;
  assert.ok(report.max_workers_used >= 2, `max workers ${report.max_workers_used}`);
  const ups = report.decisions.filter((d) => d.action === "up").map((d) => d.atMs / 1000);
  const downs = report.decisions.filter((d) => d.action === "down").map((d) => d.atMs / 1000);
  assert.ok(ups.length > 0 && ups.every((s) => s > 60), `ups at ${ups}`);
  assert.ok(
    downs.some((s) => s > 180),
    `downs at ${downs}`,
  );
  // Fewer worker-seconds than a fleet sized for the peak all along.
  assert.ok(report.worker_seconds < report.max_workers_used * a.result.sim_seconds, `${report.worker_seconds} worker-seconds`);
  // Down a worker at a time after the step; the last step down waits until one worker fewer is
  // expected to stay under the up line (estimate × n ÷ (n − 1)), which at 2 workers and ~7 ms it is not.
  const last = report.workers_over_time.at(-1);
  assert.ok((last?.[1] ?? 0) < report.max_workers_used, `ends with ${last?.[1]} workers`);
});

test("the planner meets the ITL target for more requests than the fixed single worker it started as", async () => {
  const { report } = await planned();
  // Advisory: the same planner that changes nothing is a fixed fleet that still counts attainment.
  const advisory = new ReplayPlanner(compilePlannerOptions({ mode: "load", advisory: true, sloTtftMs: 2000, sloItlMs: 10 }), {
    aggregated: 1,
  });
  const result = await replay({ ...base, ...advisory.hooks });
  const one = advisory.report(result.sim_seconds * 1000, result.requests);
  assert.equal(one.max_workers_used, 1);
  assert.ok(report.slo_attainment > one.slo_attainment, `planner ${report.slo_attainment} vs one worker ${one.slo_attainment}`);
});

test("--min-workers 0 in a replay: the pool drains to none over a quiet spell and the next request waits out one cold start", async () => {
  // Ten requests two seconds apart, five idle minutes, ten more; idle for 60 s scales to zero.
  const burst = (startMs: number, first: number) =>
    Array.from({ length: 10 }, (_, i) => ({
      timestamp: startMs + i * 2000,
      inputLength: 512,
      outputLength: 8,
      hashIds: [first + i],
    }));
  const quiet = [...burst(0, 0), ...burst(318_000, 100)];
  const zero = new ReplayPlanner(
    compilePlannerOptions({
      mode: "load",
      minWorkers: 0,
      scaleToZeroAfterSeconds: 60,
      loadIntervalSeconds: 5,
      sloTtftMs: 60_000,
    }),
    { aggregated: 1 },
    15_000,
  );
  const ttfts: number[] = [];
  const result = await replay({ trace: quiet, policy: "kv", workers: 1, blockSize: 64, seed: 1, ttftSink: ttfts, ...zero.hooks });
  assert.equal(result.completed, 20);
  assert.equal(result.rejected, 0);
  const report = zero.report(result.sim_seconds * 1000, result.requests);
  const changes = report.decisions.map((d) => [d.from, d.to, d.reason]);
  // The last request of the first burst ends near 18 s: idle for 60 s from then, the tick at 80 s drains the worker.
  assert.deepEqual(changes[0]?.slice(0, 2), [1, 0]);
  assert.equal(report.decisions[0]?.atMs, 80_000);
  assert.deepEqual(changes[1], [0, 1, "a request arrived at a pool scaled to zero"]);
  assert.equal(report.decisions[1]?.atMs, 318_000);
  assert.deepEqual(report.workers_over_time, [
    [0, 1],
    [80, 0],
    [318, 1],
  ]);
  // The first request after the quiet spell waits the 15 s start-up; the first burst's did not.
  const second = ttfts.slice(10);
  assert.ok(Math.max(...ttfts.slice(0, 10)) < 1000, JSON.stringify(ttfts.slice(0, 10)));
  assert.ok(second[0]! >= 15_000 && second[0]! < 16_000, JSON.stringify(second));
  // No worker ran through the quiet spell after the drain: 80 s of the first worker, then one from 318 s.
  assert.ok(report.worker_seconds < 80 + (result.sim_seconds - 318) + 1, String(report.worker_seconds));
});
