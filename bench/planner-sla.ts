// The SLA planner against the load-only planner and fixed fleets sized for the mean and for the
// peak, in one run, on the same traces, in virtual time with the real router, planner and mocker
// workers: SLA attainment (requests within both targets) and worker-seconds (what the fleet cost).
// Also the planner's own cost per decision (wall time of a load-loop and a throughput-loop tick).
// Usage: node --import tsx bench/planner-sla.ts PROFILE.json TRACE.jsonl… (docs/benchmarks.md: sine, step, burst, Azure)
//   PROFILE.json: armature profile --engine mocker --speedup-ratio 0.2 --out PROFILE.json
import { readFileSync } from "node:fs";
import { polynomialTimingModel } from "../src/engines/index.js";
import { silentLogger } from "../src/observability/index.js";
import {
  calculateReplicas,
  compilePlannerOptions,
  type IntervalLoad,
  Planner,
  type PlannerOptions,
  parseProfile,
  VirtualConnector,
} from "../src/planner/index.js";
import { VirtualClock } from "../src/runtime/index.js";
import { loadTrace, ReplayPlanner, replay, type TraceRequest } from "../src/sim/index.js";
import { machine } from "./load/processes.js";

const [profilePath, ...tracePaths] = process.argv.slice(2);
if (!profilePath || tracePaths.length === 0) throw new Error("usage: bench/planner-sla.ts PROFILE.json TRACE.jsonl…");
const profile = parseProfile(readFileSync(profilePath, "utf8"), profilePath);
/** The mocker the profile was taken from: Dynamo's polynomial timing, 5× slower (--speedup-ratio 0.2). */
const SPEEDUP_RATIO = 0.2;
const SLO = { sloTtftMs: 1000, sloItlMs: 80 };
const MAX_WORKERS = 16;
const common = {
  policy: "kv" as const,
  blockSize: 64,
  traceBlockSize: 512,
  seed: 1,
  timing: polynomialTimingModel(SPEEDUP_RATIO),
};

/** Mean load of the whole trace, and the busiest minute's. */
function loads(trace: readonly TraceRequest[]): { mean: IntervalLoad; peak: IntervalLoad } {
  const seconds = Math.max(1, ((trace.at(-1)?.timestamp ?? 0) - (trace[0]?.timestamp ?? 0)) / 1000);
  const input = trace.reduce((a, r) => a + r.inputLength, 0) / trace.length;
  const output = trace.reduce((a, r) => a + r.outputLength, 0) / trace.length;
  const perMinute = new Map<number, number>();
  for (const r of trace)
    perMinute.set(Math.floor(r.timestamp / 60_000), (perMinute.get(Math.floor(r.timestamp / 60_000)) ?? 0) + 1);
  const busiest = Math.max(...perMinute.values()) / 60;
  const load = (rate: number): IntervalLoad => ({
    requestsPerSecond: rate,
    meanInputTokens: input,
    meanOutputTokens: output,
    kvHitRate: 0,
  });
  return { mean: load(trace.length / seconds), peak: load(busiest) };
}

function fleetFor(load: IntervalLoad): number {
  const plan = calculateReplicas(load, profile, { layout: "aggregated", ...SLO, minWorkers: 1, maxWorkers: MAX_WORKERS });
  return plan.layout === "aggregated" ? plan.workers : plan.prefillWorkers + plan.decodeWorkers;
}

interface Row {
  readonly name: string;
  readonly attainment: number;
  readonly workerSeconds: number;
  readonly maxWorkers: number;
  readonly ttftP99: number;
  readonly itlP99: number;
  readonly wallSeconds: number;
}

async function fixed(trace: readonly TraceRequest[], workers: number, name: string): Promise<Row> {
  const r = await replay({ ...common, trace, workers, slo: { ttftMs: SLO.sloTtftMs, itlMs: SLO.sloItlMs } });
  return {
    name,
    attainment: r.slo_attainment,
    workerSeconds: workers * r.sim_seconds,
    maxWorkers: workers,
    ttftP99: r.ttft_ms.p99,
    itlP99: r.itl_ms.p99,
    wallSeconds: r.wall_seconds,
  };
}

async function planned(trace: readonly TraceRequest[], options: PlannerOptions, start: number, name: string): Promise<Row> {
  const planner = new ReplayPlanner(
    compilePlannerOptions({ ...SLO, maxWorkers: MAX_WORKERS, ...options }),
    { aggregated: start },
    30_000,
  );
  const r = await replay({
    ...common,
    trace,
    workers: start,
    slo: { ttftMs: SLO.sloTtftMs, itlMs: SLO.sloItlMs },
    ...planner.hooks,
  });
  const report = planner.report(r.sim_seconds * 1000, r.requests);
  return {
    name,
    attainment: r.slo_attainment,
    workerSeconds: report.worker_seconds,
    maxWorkers: report.max_workers_used,
    ttftP99: r.ttft_ms.p99,
    itlP99: r.itl_ms.p99,
    wallSeconds: r.wall_seconds,
  };
}

console.log(
  `Planner comparison — ${machine()} — mocker (Dynamo's polynomial timing ×${1 / SPEEDUP_RATIO} slower), kv routing, SLA TTFT ${SLO.sloTtftMs} ms and ITL ${SLO.sloItlMs} ms, budget ${MAX_WORKERS} workers, new workers take 30 s\n`,
);
for (const path of tracePaths) {
  const trace = await loadTrace(path);
  const { mean, peak } = loads(trace);
  const meanFleet = fleetFor(mean);
  const peakFleet = fleetFor(peak);
  // Every planner setting at its default (docs/planner.md): the load loop judges the 90th
  // percentile of each worker's live latencies; then the 95th, and the SLA planner on top.
  const rows: Row[] = [
    await planned(trace, { mode: "load" }, meanFleet, "load planner, defaults (p90 of each worker's live latencies)"),
    await planned(trace, { mode: "load", latencyQuantile: 0.95 }, meanFleet, "load planner, --planner-quantile 0.95"),
    await planned(trace, { mode: "sla", profile }, meanFleet, "SLA planner, defaults (kalman, 60 s interval)"),
    await fixed(trace, meanFleet, `fixed, the profile's size for the mean (${meanFleet})`),
    await fixed(trace, peakFleet, `fixed, the profile's size for the busiest minute (${peakFleet})`),
  ];
  // The fleet that really holds the SLA at the peak: the smallest fixed one with ≥ 95% attainment.
  let enough = rows.at(-1) as Row;
  for (let n = peakFleet + 1; enough.attainment < 0.95 && n <= MAX_WORKERS; n++) {
    enough = await fixed(trace, n, `fixed, the smallest fleet with ≥ 95% attainment (${n})`);
    rows.push(enough);
  }
  // …and when the peak's size holds them, a smaller one may too.
  for (let n = peakFleet - 1; enough === rows.at(-1) && enough.attainment >= 0.95 && n >= 1; n--) {
    const smaller = await fixed(trace, n, `fixed, the smallest fleet with ≥ 95% attainment (${n})`);
    if (smaller.attainment < 0.95) break;
    rows.push(smaller);
    enough = smaller;
  }
  const peakCost = enough.workerSeconds;
  console.log(
    `\n${path.split("/").at(-1)}: ${trace.length} requests, mean ${mean.requestsPerSecond.toFixed(2)} req/s, busiest minute ${peak.requestsPerSecond.toFixed(2)} req/s, mean ${mean.meanInputTokens.toFixed(0)} in / ${mean.meanOutputTokens.toFixed(0)} out tokens\n`,
  );
  console.log(
    "| fleet | SLA attainment | worker-seconds | of the smallest fixed fleet with ≥ 95% | most workers | TTFT p99 ms | ITL p99 ms | wall s |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of rows) {
    console.log(
      `| ${r.name} | ${(100 * r.attainment).toFixed(1)}% | ${r.workerSeconds.toFixed(0)} | ${((100 * r.workerSeconds) / peakCost).toFixed(0)}% | ${r.maxWorkers} | ${r.ttftP99.toFixed(0)} | ${r.itlP99.toFixed(1)} | ${r.wallSeconds.toFixed(0)} |`,
    );
  }
}

// The planner's own cost: wall time per decision, on a virtual clock with no fleet behind it.
const clock = new VirtualClock();
const connector = await VirtualConnector.create({
  clock,
  roles: ["aggregated"],
  startupDelayMs: 0,
  initialWorkers: { aggregated: ["w0"] },
  workers: { addWorker: () => `w${Math.random()}`, drainWorker: async () => {}, removeWorker: () => {} },
});
const options = compilePlannerOptions({ ...SLO, mode: "sla", profile, maxWorkers: MAX_WORKERS });
let tick = 0;
const planner = Planner.start({
  options,
  clock,
  connector,
  logger: silentLogger,
  signals: {
    takeInterval: () => ({
      requestsPerSecond: 5 + Math.sin(tick++ / 10),
      meanInputTokens: 2000,
      meanOutputTokens: 200,
      kvHitRate: 0.3,
    }),
    estimates: () => [{ ttftMs: 300 + 100 * Math.sin(tick / 7), itlMs: 30 }],
  },
});
const N = 2000;
let t = performance.now();
for (let i = 0; i < N; i++) await planner.loadTick();
const loadUs = ((performance.now() - t) / N) * 1000;
t = performance.now();
for (let i = 0; i < N; i++) await planner.throughputTick();
const throughputUs = ((performance.now() - t) / N) * 1000;
await planner.close();
await connector.close();
console.log(
  `\nPlanner cost per decision (mean of ${N}): load loop ${loadUs.toFixed(1)} µs, throughput loop (predict + size) ${throughputUs.toFixed(1)} µs`,
);
