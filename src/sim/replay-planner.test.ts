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
