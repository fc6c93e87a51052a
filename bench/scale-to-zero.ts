// Scale to zero in virtual time, with the real router, planner and mocker workers: a morning of
// chat (one request every 2 s for 5 minutes), a quiet spell, then a second burst. Each quiet spell
// is replayed with `--min-workers 0` (default --scale-to-zero-after 600 s, workers start in 30 s)
// and with `--min-workers 1`: worker-seconds, the workers alive during the quiet spell, and the
// TTFT of the first request after it (its cold start) against the others'.
// Usage: node --import tsx bench/scale-to-zero.ts [QUIET_MINUTES …]   (default 5 15 60)

import { polynomialTimingModel } from "../src/engines/index.js";
import { compilePlannerOptions } from "../src/planner/index.js";
import { ReplayPlanner, replay, type TraceRequest } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const STARTUP_MS = 30_000;
const quietMinutes = process.argv.slice(2).map(Number);

/** A request every 2 s for 5 minutes, `quietMs` of nothing, then 5 minutes more; each its own conversation. */
function trace(quietMs: number): TraceRequest[] {
  const burst = (startMs: number, first: number) =>
    Array.from({ length: 150 }, (_, i) => ({
      timestamp: startMs + i * 2000,
      inputLength: 512,
      outputLength: 64,
      hashIds: [first + i],
    }));
  return [...burst(0, 0), ...burst(300_000 + quietMs, 1000)];
}

async function run(quietMs: number, minWorkers: number) {
  const requests = trace(quietMs);
  const ttfts: number[] = [];
  const planner = new ReplayPlanner(
    compilePlannerOptions({ minWorkers, sloTtftMs: 1000, sloItlMs: 80, maxWorkers: 4 }),
    { aggregated: 1 },
    STARTUP_MS,
  );
  const result = await replay({
    trace: requests,
    workers: 1,
    policy: "kv",
    blockSize: 64,
    traceBlockSize: 512,
    seed: 1,
    timing: polynomialTimingModel(1),
    slo: { ttftMs: 1000, itlMs: 80 },
    ttftSink: ttfts,
    ...planner.hooks,
  });
  const report = planner.report(result.sim_seconds * 1000, result.requests);
  // Workers alive over the quiet spell, from the planner's timeline: [seconds, count] at each change.
  const quietStart = 300_000 - 2000;
  const quietEnd = 300_000 + quietMs;
  let alive = 0;
  let at = 0;
  let workerMsQuiet = 0;
  for (const [seconds, count] of [...report.workers_over_time, [result.sim_seconds, 0] as const]) {
    const from = Math.max(at, quietStart);
    const to = Math.min(seconds * 1000, quietEnd);
    if (to > from) workerMsQuiet += alive * (to - from);
    alive = count;
    at = seconds * 1000;
  }
  // The sink hears TTFTs as requests complete: the 151st is the first of the second burst.
  return { result, report, workerSecondsQuiet: workerMsQuiet / 1000, firstAfter: ttfts[150] ?? Number.NaN, ttfts };
}

console.log(
  `Scale to zero — ${machine()} — mocker (Dynamo's polynomial timing), kv routing, one worker at the start, workers start in ${STARTUP_MS / 1000} s, --scale-to-zero-after 600 s (default)\n`,
);
console.log(
  "| quiet spell | --min-workers | requests completed | worker-seconds | of which in the quiet spell | first request after it: TTFT (ms) | TTFT p50 / max of all (ms) | decisions |",
);
console.log("|---:|---:|---:|---:|---:|---:|---:|---|");
for (const minutes of quietMinutes.length > 0 ? quietMinutes : [5, 15, 60]) {
  for (const minWorkers of [1, 0]) {
    const { result, report, workerSecondsQuiet, firstAfter, ttfts } = await run(minutes * 60_000, minWorkers);
    const sorted = [...ttfts].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    const decisions = report.decisions.map((d) => `${d.from}→${d.to} at ${Math.round(d.atMs / 1000)} s`).join(", ");
    console.log(
      `| ${minutes} min | ${minWorkers} | ${result.completed} of ${result.requests} | ${Math.round(report.worker_seconds)} | ${Math.round(workerSecondsQuiet)} | ${Math.round(firstAfter)} | ${Math.round(p50)} / ${Math.round(sorted.at(-1) ?? Number.NaN)} | ${decisions || "none"} |`,
    );
  }
}
