import { ObjectTier, type SchedulingPolicy, SeededRandom, type TimingModel } from "../engines/index.js";
import type { RunningRequestListener } from "../frontend/index.js";
import type { MetricMeter } from "../observability/index.js";
import { type GenerateRequest, subjects, type WorkerRole } from "../protocol/index.js";
import type { BusyThresholds } from "../router/index.js";
import { createEmbeddedRuntime, type Runtime, VirtualClock } from "../runtime/index.js";
import { type CostModel, defaultCostModels } from "../transfer/index.js";
import { DelayedEventPlane } from "./delayed-event-plane.js";
import type { Summary } from "./latency-stats.js";
import { type FinishedReplayRequest, sendRequest } from "./replay-client.js";
import { MockerFleet, type ReplayFleet } from "./replay-fleet.js";
import { type PriorityClassResult, ReplayRecorder, type ServiceLevel } from "./replay-recorder.js";
import { type ReplayPolicy, startReplayRouting } from "./replay-routing.js";
import { synthesizeTokens, type TraceRequest } from "./trace.js";
import { runClockUntil } from "./virtual-time.js";

export type { ReplayPolicy } from "./replay-routing.js";

/** What a replay hands to whatever runs beside it (a planner scaling the fleet). */
export interface ReplayControl {
  readonly fleet: ReplayFleet;
  readonly clock: VirtualClock;
  /** The replay's planes: load reports and KV events on `events`, workers in `discovery`. */
  readonly runtime: Runtime;
  /** Aborted once the last request ended: stop then. */
  readonly signal: AbortSignal;
}

export interface ReplayOptions {
  readonly trace: readonly TraceRequest[];
  readonly policy: ReplayPolicy;
  /** Aggregated workers (ignored when `prefill` is above 0). */
  readonly workers: number;
  /** Prefill workers: above 0 splits prefill from decode. Default 0. */
  readonly prefill?: number;
  /** Decode workers beside the prefill workers. Default `workers`. */
  readonly decode?: number;
  /** Disaggregated: prompts with fewer uncached tokens are prefilled on the decode worker. Default 0 (never). */
  readonly disaggThreshold?: number;
  /** Disaggregated: prefill on the decode worker while prefill workers hold this many requests each. Default unlimited. */
  readonly maxPrefillQueue?: number;
  /** Disaggregated: the link that carries KV between the pools. Default the TCP backend's model. */
  readonly transfer?: CostModel;
  /** KV bytes per token the handoff moves. Default 131072 (Llama 3 8B, FP16). */
  readonly kvBytesPerToken?: number;
  /** Arrival-rate multiplier: 2 replays the trace twice as fast. Default 1. */
  readonly speedup?: number;
  /** Engine KV block size. Default 64. */
  readonly blockSize?: number;
  /** KV capacity per worker, in blocks. Default 16384. */
  readonly kvBlocks?: number;
  /** How each engine orders what waits and what it preempts (vLLM's `--scheduling-policy`). Default fcfs. */
  readonly schedulingPolicy?: SchedulingPolicy | undefined;
  /** Host-tier (pinned host memory) capacity per worker, in blocks. Default 0: no host tier. */
  readonly hostKvBlocks?: number;
  /** Host-to-device bandwidth that onboards host-tier blocks, GB/s. Default 25. */
  readonly hostGbps?: number;
  /** Disk-tier capacity per worker, in blocks (blocks used twice go there). Default 0: no disk tier. */
  readonly diskKvBlocks?: number;
  /** Disk-to-device bandwidth that onboards disk-tier blocks, GB/s. Default 5. */
  readonly diskGbps?: number;
  /** Object-tier capacity in blocks, one tier shared by every worker. Default 0: no object tier. */
  readonly objectKvBlocks?: number;
  /** Object-store-to-device bandwidth that onboards object-tier blocks, GB/s. Default 1. */
  readonly objectGbps?: number;
  /** KV policy: what a host-tier block saves of prefill, against 1 on the device. Default 0.8. */
  readonly lowerTierWeight?: number;
  /** Longest prompt plus completion a worker takes. Default 131072 (Mooncake's traces reach ~122k). */
  readonly contextLength?: number;
  /** Tokens per trace hash id. Default 512. */
  readonly traceBlockSize?: number;
  readonly timing?: TimingModel;
  /** KV policy's weight of prefill work against decode load. Default the router's (`DEFAULT_OVERLAP_WEIGHT`). */
  readonly overlapWeight?: number;
  /** KV policy: what a worker's lead (blocks no other worker holds) counts, in overlap weights. Default the router's (`DEFAULT_EXCLUSIVE_FACTOR`). */
  readonly exclusiveFactor?: number;
  /** KV policy: above 0, a softmax over its costs is sampled (seeded). Default 0: the cheapest. */
  readonly routerTemperature?: number;
  /** When a worker counts as busy and how many requests may wait for one (the router's defaults). */
  readonly busy?: BusyThresholds;
  /** Time from a worker publishing KV events to the router's index applying them. Default 5 ms. */
  readonly kvEventDelayMs?: number;
  /** Time from a worker publishing its load to the router reading it. Default 5 ms. */
  readonly loadReportDelayMs?: number;
  /** Start-up delay of workers added while the replay runs (`fleet.addWorker`). Default 0. */
  readonly workerStartupMs?: number;
  /** How long a drained worker may take to finish its requests before it is closed anyway. Default 1 hour. */
  readonly drainGraceMs?: number;
  /** Runs beside the replay from its first instant (a planner); the replay waits for it after `signal`. */
  readonly control?: (control: ReplayControl) => Promise<void> | void;
  /** Hears every completed request (a planner's traffic window). */
  readonly onRequestFinished?: (request: FinishedReplayRequest) => void;
  /** Follows each request while it runs, on the virtual clock (a planner's live latencies). */
  readonly onRequestStarted?: (nowMs: number) => RunningRequestListener;
  /** Models kept served while they have no worker (a planner with `--min-workers 0`): their requests wait. */
  readonly keptModels?: readonly string[] | undefined;
  /** Receives the router's overhead and disaggregation metrics, as `armature serve`'s /metrics does. */
  readonly meter?: MetricMeter;
  /** Targets for goodput (requests meeting every target per second). */
  readonly slo?: ServiceLevel;
  /** Seeds every random choice. Default 1. */
  readonly seed?: number;
  /** Called now and then with (requests finished, requests in all). */
  readonly onProgress?: (done: number, total: number) => void;
  /** Receives every completed request's TTFT in ms (for charts). */
  readonly ttftSink?: number[];
}

export interface ReplayResult {
  readonly policy: ReplayPolicy;
  /** `aggregated N` or `disaggregated P+D` (the workers at the start). */
  readonly deployment: string;
  readonly requests: number;
  readonly completed: number;
  /**
   * Requests the router refused or shed (every worker busy and its queue full, or their deadline out
   * of reach: HTTP 503 in `armature serve`).
   */
  readonly rejected: number;
  /** Prompt tokens served from a worker's prefix cache (device or lower tiers) / all prompt tokens. */
  readonly hit_rate: number;
  /** The part of `hit_rate` copied back from host tiers. */
  readonly host_hit_rate: number;
  /** The part of `hit_rate` copied back from disk tiers. */
  readonly disk_hit_rate: number;
  /** The part of `hit_rate` copied back from the shared object tier. */
  readonly object_hit_rate: number;
  readonly ttft_ms: Summary;
  readonly itl_ms: Summary;
  readonly throughput_tok_s: number;
  /** Completed requests that met the SLO targets, per simulated second (all completed ones without targets). */
  readonly goodput_req_s: number;
  /** Share of the trace's requests that completed within every SLO target (refused ones missed). */
  readonly slo_attainment: number;
  /** Each priority class apart, most urgent first; only when the trace has more than one. */
  readonly by_priority?: readonly PriorityClassResult[];
  /** Disaggregated: requests prefilled on the decode worker (conditional disaggregation, or a failed prefill). */
  readonly local_prefills?: number;
  /** Simulated time from the start to the end of the last request. */
  readonly sim_seconds: number;
  readonly wall_seconds: number;
}

/** Virtual time without any request making progress after which a replay gives up. */
const STALL_MS = 3_600_000;

/**
 * Replays a trace through what `armature serve` runs: the real router (KV index fed by the event
 * plane, booked and published load, busy thresholds and admission queue, the prefill stage),
 * worker hosts around mocker engines, on the embedded runtime, in virtual time. KV events and load
 * reports take their modelled delays. Nothing sleeps, so an hour of traffic takes as long as the
 * computation does; the same options and seed give the same result.
 */
export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const started = performance.now();
  const clock = new VirtualClock();
  const speedup = options.speedup ?? 1;
  const traceBlockSize = options.traceBlockSize ?? 512;
  const rng = new SeededRandom(options.seed ?? 1);
  const blockSize = options.blockSize ?? 64;
  const runtime = delayedRuntime(clock, options.kvEventDelayMs ?? 5, options.loadReportDelayMs ?? 5);
  const recorder = new ReplayRecorder(options.slo ?? {}, options.ttftSink);
  const routing = startReplayRouting({
    runtime,
    policy: options.policy,
    blockSize,
    random: () => rng.next(),
    overlapWeight: options.overlapWeight,
    exclusiveFactor: options.exclusiveFactor,
    temperature: options.routerTemperature,
    lowerTierWeight: options.lowerTierWeight,
    busy: options.busy,
    disaggThreshold: options.disaggThreshold,
    maxPrefillQueue: options.maxPrefillQueue,
    meter: options.meter,
    onPrefillOutcome: (outcome) => {
      if (outcome.startsWith("local_")) recorder.localPrefills++;
      else recorder.remotePrefills++;
    },
  });
  for (const model of options.keptModels ?? []) routing.router.workers.keep(model);
  const fleet = new MockerFleet({
    runtime,
    clock,
    engine: engineOptions(options, blockSize),
    transfer: options.transfer ?? defaultCostModels.tcp,
    workerStartupMs: options.workerStartupMs ?? 0,
    drainGraceMs: options.drainGraceMs ?? 3_600_000,
    onEngine: (engine) => engine.onTierHits((requestId, tokens) => recorder.noteTierHits(requestId, tokens)),
  });
  const prefillCount = options.prefill ?? 0;
  const disaggregated = prefillCount > 0;
  const decodeCount = disaggregated ? (options.decode ?? options.workers) : options.workers;
  const roles: WorkerRole[] = disaggregated
    ? [...Array<WorkerRole>(prefillCount).fill("prefill"), ...Array<WorkerRole>(decodeCount).fill("decode")]
    : Array<WorkerRole>(decodeCount).fill("aggregated");
  for (const role of roles) await fleet.addWorker(role, { startupMs: 0 });

  const stopControl = new AbortController();
  const controlling = Promise.resolve().then(() => options.control?.({ fleet, clock, runtime, signal: stopControl.signal }));
  const total = options.trace.length;
  let finished = 0;
  let lastProgress = 0;
  let lastEnd = 0;
  const progress = (): void => {
    lastProgress = clock.now();
  };
  const serve = async (request: TraceRequest, index: number): Promise<void> => {
    recorder.arrive(request.priority);
    const generate: GenerateRequest = {
      type: "generate-request",
      requestId: String(index),
      model: "replay",
      tokenIds: synthesizeTokens(request, traceBlockSize, 32000, index),
      sampling: { temperature: 0 },
      maxTokens: request.outputLength,
      ...(request.priority === undefined ? {} : { priority: request.priority }),
      ...(request.deadlineMs === undefined ? {} : { timeoutMs: request.deadlineMs }),
    };
    try {
      await sendRequest(routing.router, generate, clock, recorder, {
        onToken: progress,
        onFinished: options.onRequestFinished,
        onStarted: options.onRequestStarted,
      });
    } finally {
      finished++;
      lastEnd = clock.now();
      progress();
      if (finished % 500 === 0) options.onProgress?.(finished, total);
    }
  };
  const inflight: Promise<void>[] = [];
  const arrivals = (async () => {
    for (let i = 0; i < total; i++) {
      const request = options.trace[i] as TraceRequest;
      const at = request.timestamp / speedup;
      if (at > clock.now()) await clock.sleep(at - clock.now());
      progress();
      inflight.push(serve(request, i));
    }
    await Promise.all(inflight);
  })();
  try {
    await runClockUntil(clock, arrivals, () => {
      if (finished < inflight.length && clock.now() - lastProgress > STALL_MS) {
        throw new Error(
          `replay stalled: ${inflight.length - finished} requests made no progress for ${STALL_MS / 1000} simulated seconds`,
        );
      }
    });
  } finally {
    stopControl.abort();
    await runClockUntil(
      clock,
      controlling.catch(() => undefined),
    );
    routing.close();
    await runClockUntil(clock, fleet.close());
    await runtime.close();
  }
  // A control that stopped on the replay's own signal ended as asked.
  await controlling.catch((error: unknown) => {
    if (error !== stopControl.signal.reason) throw error;
  });
  const simSeconds = lastEnd / 1000;
  return {
    policy: options.policy,
    deployment: disaggregated ? `disaggregated ${prefillCount}+${decodeCount}` : `aggregated ${decodeCount}`,
    requests: total,
    completed: recorder.completed,
    rejected: recorder.rejected,
    hit_rate: recorder.hitRate,
    host_hit_rate: recorder.hostHitRate,
    disk_hit_rate: recorder.diskHitRate,
    object_hit_rate: recorder.objectHitRate,
    ttft_ms: recorder.ttftSummary,
    itl_ms: recorder.itlSummary,
    throughput_tok_s: simSeconds === 0 ? 0 : recorder.outputTokens / simSeconds,
    goodput_req_s: simSeconds === 0 ? 0 : recorder.withinSlo / simSeconds,
    slo_attainment: total === 0 ? 0 : recorder.withinSlo / total,
    ...(recorder.classes.length > 1 ? { by_priority: recorder.classes } : {}),
    ...(disaggregated ? { local_prefills: recorder.localPrefills } : {}),
    sim_seconds: simSeconds,
    wall_seconds: (performance.now() - started) / 1000,
  };
}

/** The embedded runtime on `clock`, its KV events and load reports arriving after their delays. */
function delayedRuntime(clock: VirtualClock, kvEventDelayMs: number, loadReportDelayMs: number): Runtime {
  const embedded = createEmbeddedRuntime({ clock, inProcess: true });
  const kvEvents = subjects.kvEvents("");
  const load = subjects.load("");
  const events = new DelayedEventPlane(embedded.events, clock, (subject) =>
    subject.startsWith(kvEvents) ? kvEventDelayMs : subject.startsWith(load) ? loadReportDelayMs : 0,
  );
  return {
    ...embedded,
    events,
    async close() {
      await events.close();
      await embedded.close();
    },
  };
}

function engineOptions(options: ReplayOptions, blockSize: number) {
  const objectKvBlocks = options.objectKvBlocks ?? 0;
  const objectTier =
    objectKvBlocks > 0
      ? new ObjectTier({ capacityBlocks: objectKvBlocks, blockSize, ...(options.objectGbps ? { gbps: options.objectGbps } : {}) })
      : undefined;
  return {
    blockSize,
    kvBlocks: options.kvBlocks ?? 16384,
    contextLength: options.contextLength ?? 131072,
    kvBytesPerToken: options.kvBytesPerToken ?? 131072,
    hostKvBlocks: options.hostKvBlocks ?? 0,
    ...(options.hostGbps !== undefined ? { hostGbps: options.hostGbps } : {}),
    diskKvBlocks: options.diskKvBlocks ?? 0,
    ...(options.diskGbps !== undefined ? { diskGbps: options.diskGbps } : {}),
    ...(objectTier ? { objectTier } : {}),
    ...(options.timing ? { timing: options.timing } : {}),
    ...(options.schedulingPolicy ? { schedulingPolicy: options.schedulingPolicy } : {}),
  };
}
