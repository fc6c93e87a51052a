import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import {
  loadTimingProfile,
  polynomialTimingModel,
  profiledTimingModel,
  SCHEDULING_POLICIES,
  type SchedulingPolicy,
} from "../engines/index.js";
import { type CompiledPlannerOptions, compilePlannerOptions } from "../planner/index.js";
import type { WorkerRole } from "../protocol/index.js";
import { ArmatureError } from "../protocol/index.js";
import { DEFAULT_EXCLUSIVE_FACTOR, DEFAULT_OVERLAP_WEIGHT } from "../router/index.js";
import {
  loadTrace,
  type PlannerReplayReport,
  ReplayPlanner,
  type ReplayPolicy,
  type ReplayResult,
  renderPlannerChart,
  renderTtftChart,
  replay,
  sharedCacheHitBound,
  type TtftSeries,
  type WorkerSeries,
} from "../sim/index.js";
import { parsePredictorPeriod } from "./planner-settings.js";
import { readProfile } from "./serve-options.js";
import { plannerSizingFlags } from "./serve-settings.js";

export const REPLAY_USAGE = `usage: armature replay TRACE.jsonl [--workers N] [--policy kv,kv-approx,round-robin,random,least-loaded]
       [--speedup X] [--speedup-ratio X] [--block-size B] [--kv-blocks N] [--trace-block-size 512] [--timing-profile FILE]
       [--seed N] [--limit N] [--json] [--chart FILE.svg] [--slo-ttft MS] [--slo-itl MS] [--kv-overlap-weight W] [--kv-exclusive-factor F] [--router-temperature T]
       [--host-kv-blocks N [--host-gbps G] [--lower-tier-weight W]] [--disk-kv-blocks N [--disk-gbps G]]
       [--object-kv-blocks N [--object-gbps G]] [--kv-event-delay-ms MS] [--load-report-delay-ms MS]
       [--busy-decode-blocks F] [--busy-prefill-frac F] [--busy-sequences-frac F] [--priority-reserve F]
       [--router-queue-size N] [--scheduling-policy fcfs|priority]
       [--prefill N --decode M [--disagg-threshold TOKENS] [--max-prefill-queue N] [--transfer-gbps G] [--transfer-alpha-ms A]
        [--kv-bytes-per-token B]]
       [--planner load|sla [--profile FILE] [--min-workers N] [--scale-to-zero-after S] [--max-workers N] [--planner-interval S]
        [--planner-load-interval S] [--predictor NAME] [--predictor-period auto|off|S] [--planner-cooldown S]
        [--worker-startup-s S]
        [--planner-up-threshold F] [--planner-down-threshold F] [--planner-quantile Q]]
  With --planner the real planner sizes the pools as the replay runs (workers start after --worker-startup-s, 30);
  the JSON adds worker_seconds, max_workers_used and the decisions, and --chart draws workers and load over time.`;

const POLICIES: readonly ReplayPolicy[] = ["kv", "kv-approx", "round-robin", "random", "least-loaded"];

/**
 * `armature replay`: a Mooncake trace through what `armature serve --engine mocker` runs (router,
 * admission queue, prefill stage, worker hosts, the embedded planes), in virtual time.
 */
export async function replayCommand(
  argv: readonly string[],
  out: (t: string) => void,
  err: (t: string) => void,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      workers: { type: "string", default: "8" },
      policy: { type: "string", default: "kv" },
      speedup: { type: "string", default: "1" },
      "speedup-ratio": { type: "string", default: "1" },
      "block-size": { type: "string", default: "64" },
      "kv-blocks": { type: "string", default: "16384" },
      "scheduling-policy": { type: "string" },
      "trace-block-size": { type: "string", default: "512" },
      "timing-profile": { type: "string" },
      seed: { type: "string", default: "1" },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
      chart: { type: "string" },
      "slo-ttft": { type: "string" },
      "slo-itl": { type: "string" },
      prefill: { type: "string", default: "0" },
      decode: { type: "string" },
      "disagg-threshold": { type: "string", default: "0" },
      "max-prefill-queue": { type: "string" },
      "transfer-gbps": { type: "string", default: "2" },
      "transfer-alpha-ms": { type: "string", default: "0.15" },
      "kv-bytes-per-token": { type: "string", default: "131072" },
      "kv-overlap-weight": { type: "string", default: String(DEFAULT_OVERLAP_WEIGHT) },
      "kv-exclusive-factor": { type: "string", default: String(DEFAULT_EXCLUSIVE_FACTOR) },
      "router-temperature": { type: "string", default: "0" },
      "host-kv-blocks": { type: "string", default: "0" },
      "host-gbps": { type: "string", default: "25" },
      "disk-kv-blocks": { type: "string", default: "0" },
      "disk-gbps": { type: "string", default: "5" },
      "object-kv-blocks": { type: "string", default: "0" },
      "object-gbps": { type: "string", default: "1" },
      "lower-tier-weight": { type: "string", default: "0.8" },
      "kv-event-delay-ms": { type: "string", default: "5" },
      "load-report-delay-ms": { type: "string", default: "5" },
      "busy-decode-blocks": { type: "string" },
      "busy-prefill-frac": { type: "string" },
      "busy-sequences-frac": { type: "string" },
      "priority-reserve": { type: "string" },
      "router-queue-size": { type: "string" },
      planner: { type: "string" },
      profile: { type: "string" },
      "min-workers": { type: "string" },
      "scale-to-zero-after": { type: "string" },
      "max-workers": { type: "string" },
      "planner-interval": { type: "string" },
      "planner-load-interval": { type: "string" },
      predictor: { type: "string" },
      "predictor-period": { type: "string" },
      "planner-cooldown": { type: "string" },
      "planner-up-threshold": { type: "string" },
      "planner-down-threshold": { type: "string" },
      "planner-quantile": { type: "string" },
      "worker-startup-s": { type: "string", default: "30" },
    },
  });
  const path = positionals[0];
  if (!path) throw new ArmatureError("CONFIG_INVALID", `a trace file is required\n${REPLAY_USAGE}`);
  const number = (flag: string, value: string | undefined, min: number): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min)
      throw new ArmatureError("CONFIG_INVALID", `--${flag} must be a number ≥ ${min}, got '${value}'`);
    return n;
  };
  const policies = (values.policy ?? "kv").split(",").map((p) => p.trim()) as ReplayPolicy[];
  for (const p of policies) {
    if (!POLICIES.includes(p)) throw new ArmatureError("CONFIG_INVALID", `--policy takes ${POLICIES.join(", ")}; got '${p}'`);
  }
  let trace = await loadTrace(path);
  if (values.limit) trace = trace.slice(0, number("limit", values.limit, 1));
  const speedup = number("speedup", values.speedup, Number.MIN_VALUE);
  const blockSize = number("block-size", values["block-size"], 1);
  const traceBlockSize = number("trace-block-size", values["trace-block-size"], 1);
  const engineSpeedup = number("speedup-ratio", values["speedup-ratio"], Number.MIN_VALUE);
  const timing = values["timing-profile"]
    ? profiledTimingModel(await loadTimingProfile(values["timing-profile"]), engineSpeedup)
    : polynomialTimingModel(engineSpeedup);
  const optional = (flag: string, value: string | undefined, min: number): number | undefined =>
    value === undefined ? undefined : number(flag, value, min);
  const prefill = number("prefill", values.prefill, 0);
  const workers = number("workers", values.workers, prefill > 0 ? 0 : 1);
  const disaggregation = {
    prefill,
    decode: optional("decode", values.decode, 1),
    disaggThreshold: number("disagg-threshold", values["disagg-threshold"], 0),
    maxPrefillQueue: optional("max-prefill-queue", values["max-prefill-queue"], 1),
    transfer: {
      alphaMs: number("transfer-alpha-ms", values["transfer-alpha-ms"], 0),
      bytesPerMs: number("transfer-gbps", values["transfer-gbps"], Number.MIN_VALUE) * 1e6,
    },
    kvBytesPerToken: number("kv-bytes-per-token", values["kv-bytes-per-token"], 0),
  };
  const plannerOptions = await replayPlannerOptions(values, optional, prefill > 0);
  const slo = {
    ttftMs: optional("slo-ttft", values["slo-ttft"], 0) ?? plannerOptions?.sloTtftMs,
    itlMs: optional("slo-itl", values["slo-itl"], 0) ?? plannerOptions?.sloItlMs,
  };
  const startupMs = number("worker-startup-s", values["worker-startup-s"], 0) * 1000;
  const initial: Partial<Record<WorkerRole, number>> =
    prefill > 0 ? { prefill, decode: disaggregation.decode ?? workers } : { aggregated: workers };
  const busyDecodeBlocks = optional("busy-decode-blocks", values["busy-decode-blocks"], 0);
  const busyPrefillFrac = optional("busy-prefill-frac", values["busy-prefill-frac"], 0);
  const busySequencesFrac = optional("busy-sequences-frac", values["busy-sequences-frac"], 0.01);
  const priorityReserve = optional("priority-reserve", values["priority-reserve"], 0);
  if (priorityReserve !== undefined && priorityReserve >= 1)
    throw new ArmatureError("CONFIG_INVALID", `--priority-reserve must be below 1, got ${priorityReserve}`);
  const routerQueueSize = optional("router-queue-size", values["router-queue-size"], 0);
  const schedulingPolicy = values["scheduling-policy"] as SchedulingPolicy | undefined;
  if (schedulingPolicy !== undefined && !SCHEDULING_POLICIES.includes(schedulingPolicy))
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--scheduling-policy must be one of ${SCHEDULING_POLICIES.join(", ")}, got '${schedulingPolicy}'`,
    );
  const busy = {
    ...(busyDecodeBlocks !== undefined ? { activeDecodeBlocks: busyDecodeBlocks } : {}),
    ...(busyPrefillFrac !== undefined ? { activePrefillTokensFrac: busyPrefillFrac } : {}),
    ...(busySequencesFrac !== undefined ? { activeSequencesFrac: busySequencesFrac } : {}),
    ...(priorityReserve !== undefined ? { priorityReserve } : {}),
    ...(routerQueueSize !== undefined ? { queueSize: Math.floor(routerQueueSize) } : {}),
  };
  const kvEventDelayMs = number("kv-event-delay-ms", values["kv-event-delay-ms"], 0);
  const loadReportDelayMs = number("load-report-delay-ms", values["load-report-delay-ms"], 0);
  const results: ReplayResult[] = [];
  const series: TtftSeries[] = [];
  const fleets: WorkerSeries[] = [];
  const plannerReports: PlannerReplayReport[] = [];
  for (const policy of policies) {
    const ttftMs: number[] = [];
    series.push({ name: policy, ttftMs });
    const planner = plannerOptions ? new ReplayPlanner(plannerOptions, initial, startupMs) : undefined;
    const result = await replay({
      ...(planner ? planner.hooks : {}),
      ttftSink: ttftMs,
      trace,
      policy,
      workers,
      overlapWeight: number("kv-overlap-weight", values["kv-overlap-weight"], 0),
      exclusiveFactor: number("kv-exclusive-factor", values["kv-exclusive-factor"], 1),
      routerTemperature: number("router-temperature", values["router-temperature"], 0),
      ...disaggregation,
      slo,
      speedup,
      blockSize,
      kvBlocks: number("kv-blocks", values["kv-blocks"], 1),
      schedulingPolicy,
      hostKvBlocks: number("host-kv-blocks", values["host-kv-blocks"], 0),
      hostGbps: number("host-gbps", values["host-gbps"], Number.MIN_VALUE),
      diskKvBlocks: number("disk-kv-blocks", values["disk-kv-blocks"], 0),
      diskGbps: number("disk-gbps", values["disk-gbps"], Number.MIN_VALUE),
      objectKvBlocks: number("object-kv-blocks", values["object-kv-blocks"], 0),
      objectGbps: number("object-gbps", values["object-gbps"], Number.MIN_VALUE),
      lowerTierWeight: number("lower-tier-weight", values["lower-tier-weight"], 0),
      traceBlockSize,
      timing,
      busy,
      kvEventDelayMs,
      loadReportDelayMs,
      seed: number("seed", values.seed, 0),
      onProgress: (done, total) => err(`\r${policy}: ${done}/${total} requests`),
    });
    err(`\r${policy}: done in ${result.wall_seconds.toFixed(1)} s${" ".repeat(20)}\n`);
    results.push(result);
    const report = planner?.report(result.sim_seconds * 1000, result.requests);
    if (report) {
      plannerReports.push(report);
      fleets.push({ name: `${policy}, planner ${values.planner}`, points: report.workers_over_time });
    }
    if (values.json) {
      const { slo_attainment: _ignored, ...plannerFigures } = report ?? ({} as Partial<PlannerReplayReport>);
      out(`${JSON.stringify(report ? { ...result, planner: values.planner, ...plannerFigures } : result)}\n`);
    }
  }
  if (values.chart && plannerOptions) {
    const end = Math.max(...results.map((r) => r.sim_seconds));
    const title = `Live workers and load, ${trace.length} requests, planner ${values.planner}`;
    await writeFile(
      values.chart,
      renderPlannerChart(
        fleets,
        trace.map((r) => r.timestamp / speedup),
        end,
        title,
      ),
    );
    err(`chart written to ${values.chart}\n`);
  } else if (values.chart) {
    const title = `TTFT, ${trace.length} requests, ${results[0]?.deployment ?? ""} workers, arrivals ×${speedup}`;
    await writeFile(values.chart, renderTtftChart(series, title));
    err(`chart written to ${values.chart}\n`);
  }
  if (!values.json) {
    const bound = sharedCacheHitBound(trace, traceBlockSize, blockSize);
    out(
      `${trace.length} requests, ${results[0]?.deployment ?? ""} workers, speedup ${speedup}, KV events and load reports ${kvEventDelayMs} / ${loadReportDelayMs} ms late; unlimited shared cache hit-rate bound ${(100 * bound).toFixed(1)}%\n\n`,
    );
    const tiers = results.some((r) => r.host_hit_rate > 0 || r.disk_hit_rate > 0 || r.object_hit_rate > 0);
    const percent = (rate: number): string => `${(100 * rate).toFixed(1)}%`;
    out(
      `| policy | completed | hit rate${tiers ? " (from host / disk / object)" : ""} | TTFT mean / p50 / p99 ms | ITL mean / p50 / p99 ms | output tok/s | goodput req/s | sim s | wall s |\n`,
    );
    out("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const [i, r] of results.entries()) {
      const p = plannerReports[i];
      if (p) {
        err(
          `${r.policy}: SLA attainment ${(100 * r.slo_attainment).toFixed(1)}%, ${p.worker_seconds.toFixed(0)} worker-seconds, at most ${p.max_workers_used} workers, ${p.decisions.length} decisions\n`,
        );
      }
      const f = (s: { mean: number; p50: number; p99: number }) =>
        `${s.mean.toFixed(0)} / ${s.p50.toFixed(0)} / ${s.p99.toFixed(0)}`;
      out(
        `| ${r.policy} | ${r.completed}/${r.requests}${r.rejected > 0 ? ` (${r.rejected} refused)` : ""} | ${percent(r.hit_rate)}${tiers ? ` (${percent(r.host_hit_rate)} / ${percent(r.disk_hit_rate)} / ${percent(r.object_hit_rate)})` : ""} | ${f(r.ttft_ms)} | ${f(r.itl_ms)} | ${r.throughput_tok_s.toFixed(0)} | ${r.goodput_req_s.toFixed(2)} | ${r.sim_seconds.toFixed(0)} | ${r.wall_seconds.toFixed(1)} |\n`,
      );
    }
    const classed = results.filter((r) => r.by_priority);
    if (classed.length > 0) {
      out("\n| policy | priority | completed | TTFT mean / p50 / p99 ms | SLO attainment |\n|---|---:|---:|---:|---:|\n");
      for (const r of classed) {
        for (const c of r.by_priority ?? []) {
          out(
            `| ${r.policy} | ${c.priority} | ${c.completed}/${c.requests}${c.rejected > 0 ? ` (${c.rejected} refused)` : ""} | ${c.ttft_ms.mean.toFixed(0)} / ${c.ttft_ms.p50.toFixed(0)} / ${c.ttft_ms.p99.toFixed(0)} | ${percent(c.slo_attainment)} |\n`,
          );
        }
      }
    }
  }
  return 0;
}

/** The planner's settings from replay's flags; undefined without `--planner`. Errors name the flag. */
async function replayPlannerOptions(
  values: Record<string, string | boolean | undefined>,
  optional: (flag: string, value: string | undefined, min: number) => number | undefined,
  disaggregated: boolean,
): Promise<CompiledPlannerOptions | undefined> {
  const mode = values.planner as string | undefined;
  if (mode === undefined) {
    const stray = plannerSizingFlags.find((flag) => values[flag] !== undefined);
    if (stray) throw new ArmatureError("CONFIG_INVALID", `--${stray} is a planner flag: add --planner load or --planner sla`);
    return undefined;
  }
  const profilePath = values.profile as string | undefined;
  const profile = profilePath ? readProfile(profilePath) : undefined;
  const num = (flag: string, min: number) => optional(flag, values[flag] as string | undefined, min);
  const given = {
    mode: mode as "load" | "sla",
    layout: disaggregated ? ("disaggregated" as const) : ("aggregated" as const),
    sloTtftMs: num("slo-ttft", Number.MIN_VALUE),
    sloItlMs: num("slo-itl", Number.MIN_VALUE),
    minWorkers: num("min-workers", 0),
    scaleToZeroAfterSeconds: num("scale-to-zero-after", Number.MIN_VALUE),
    maxWorkers: num("max-workers", 0),
    intervalSeconds: num("planner-interval", Number.MIN_VALUE),
    loadIntervalSeconds: num("planner-load-interval", Number.MIN_VALUE),
    cooldownSeconds: num("planner-cooldown", 0),
    scaleUpThreshold: num("planner-up-threshold", Number.MIN_VALUE),
    scaleDownThreshold: num("planner-down-threshold", 0),
    latencyQuantile: num("planner-quantile", 0),
    predictor: values.predictor as string | undefined,
    predictorPeriod: parsePredictorPeriod(values["predictor-period"] as string | undefined),
    profile,
  };
  return compilePlannerOptions(Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)));
}
