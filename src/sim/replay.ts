import { ObjectTier, SeededRandom, type TimingModel } from "../engines/index.js";
import type { GenerateRequest } from "../protocol/index.js";
import { VirtualClock } from "../runtime/index.js";
import { type CostModel, defaultCostModels } from "../transfer/index.js";
import type { Summary } from "./latency-stats.js";
import { type ReplayPolicy, ReplayPool } from "./replay-pool.js";
import { ReplayRecorder, type ServiceLevel } from "./replay-recorder.js";
import { serveAggregated, serveDisaggregated } from "./replay-serving.js";
import { synthesizeTokens, type TraceRequest } from "./trace.js";

export type { ReplayPolicy } from "./replay-pool.js";

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
  /** KV policy's weight of prefill work against decode load (aggregated pools). Default 1 (Dynamo's). */
  readonly overlapWeight?: number;
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
  /** `aggregated N` or `disaggregated P+D`. */
  readonly deployment: string;
  readonly requests: number;
  readonly completed: number;
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
  /** Disaggregated: requests prefilled on the decode worker (conditional disaggregation). */
  readonly local_prefills?: number;
  readonly sim_seconds: number;
  readonly wall_seconds: number;
}

/**
 * Replays a trace through the real routing policies and KV index and mocker engines (aggregated,
 * or prefill and decode pools), in virtual time: nothing sleeps, so an hour of traffic takes as
 * long as the computation does.
 */
export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const started = performance.now();
  const clock = new VirtualClock();
  const speedup = options.speedup ?? 1;
  const traceBlockSize = options.traceBlockSize ?? 512;
  const rng = new SeededRandom(options.seed ?? 1);
  const kvBytesPerToken = options.kvBytesPerToken ?? 131072;
  const blockSize = options.blockSize ?? 64;
  const objectKvBlocks = options.objectKvBlocks ?? 0;
  const objectTier =
    objectKvBlocks > 0
      ? new ObjectTier({ capacityBlocks: objectKvBlocks, blockSize, ...(options.objectGbps ? { gbps: options.objectGbps } : {}) })
      : undefined;
  const common = {
    policy: options.policy,
    clock,
    rng,
    blockSize,
    kvBlocks: options.kvBlocks ?? 16384,
    contextLength: options.contextLength ?? 131072,
    kvBytesPerToken,
    timing: options.timing,
    hostKvBlocks: options.hostKvBlocks ?? 0,
    hostGbps: options.hostGbps,
    diskKvBlocks: options.diskKvBlocks ?? 0,
    diskGbps: options.diskGbps,
    objectTier,
    lowerTierWeight: options.lowerTierWeight,
  };
  const prefillCount = options.prefill ?? 0;
  const disaggregated = prefillCount > 0;
  const prefillPool = disaggregated ? new ReplayPool({ ...common, role: "prefill", count: prefillCount }) : undefined;
  const decodeCount = disaggregated ? (options.decode ?? options.workers) : options.workers;
  // Decode workers get their KV with the request: they are chosen by load (Dynamo's decode router).
  const mainPool = new ReplayPool({
    ...common,
    role: disaggregated ? "decode" : "aggregated",
    count: decodeCount,
    overlapWeight: disaggregated ? 0 : (options.overlapWeight ?? 1),
  });
  const recorder = new ReplayRecorder(options.slo ?? {}, options.ttftSink);
  for (const engine of [...mainPool.engines, ...(prefillPool?.engines ?? [])]) {
    engine.onTierHits((requestId, tokens) => recorder.noteTierHits(requestId, tokens));
  }
  const model = {
    thresholdTokens: options.disaggThreshold ?? 0,
    maxPrefillQueue: options.maxPrefillQueue ?? Number.POSITIVE_INFINITY,
    transfer: options.transfer ?? defaultCostModels.tcp,
    kvBytesPerToken,
  };
  const total = options.trace.length;
  let finished = 0;

  const serve = async (request: TraceRequest, index: number): Promise<void> => {
    const generate: GenerateRequest = {
      type: "generate-request",
      requestId: String(index),
      model: "replay",
      tokenIds: synthesizeTokens(request, traceBlockSize, 32000, index),
      sampling: { temperature: 0 },
      maxTokens: request.outputLength,
    };
    try {
      if (prefillPool) await serveDisaggregated(clock, prefillPool, mainPool, generate, recorder, model);
      else await serveAggregated(clock, mainPool, generate, recorder);
    } finally {
      finished++;
      if (finished % 500 === 0) options.onProgress?.(finished, total);
    }
  };

  const inflight: Promise<void>[] = [];
  const arrivals = (async () => {
    for (let i = 0; i < total; i++) {
      const request = options.trace[i] as TraceRequest;
      const at = request.timestamp / speedup;
      if (at > clock.now()) await clock.sleep(at - clock.now());
      inflight.push(serve(request, i));
    }
  })();
  await clock.runUntilIdle();
  await arrivals;
  await Promise.all(inflight);
  await mainPool.close();
  await prefillPool?.close();
  const simSeconds = clock.now() / 1000;
  return {
    policy: options.policy,
    deployment: disaggregated ? `disaggregated ${prefillCount}+${decodeCount}` : `aggregated ${decodeCount}`,
    requests: total,
    completed: recorder.completed,
    hit_rate: recorder.hitRate,
    host_hit_rate: recorder.hostHitRate,
    disk_hit_rate: recorder.diskHitRate,
    object_hit_rate: recorder.objectHitRate,
    ttft_ms: recorder.ttftSummary,
    itl_ms: recorder.itlSummary,
    throughput_tok_s: simSeconds === 0 ? 0 : recorder.outputTokens / simSeconds,
    goodput_req_s: simSeconds === 0 ? 0 : recorder.withinSlo / simSeconds,
    ...(disaggregated ? { local_prefills: recorder.localPrefills } : {}),
    sim_seconds: simSeconds,
    wall_seconds: (performance.now() - started) / 1000,
  };
}
