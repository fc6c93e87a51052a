import { MockerEngine, SeededRandom, type TimingModel } from "../engines/index.js";

import { silentLogger } from "../observability/index.js";
import type { GenerateRequest } from "../protocol/index.js";
import {
  ActiveLoad,
  ApproximateIndex,
  createBasicPolicy,
  KvIndexer,
  kvPolicy,
  type RoutingPolicy,
  randomPolicy,
  type WorkerView,
} from "../router/index.js";
import { VirtualClock } from "../runtime/index.js";
import { modelCardFor } from "../worker/index.js";
import { type Summary, summarize } from "./latency-stats.js";
import { synthesizeTokens, type TraceRequest } from "./trace.js";

export type ReplayPolicy = "kv" | "kv-approx" | "round-robin" | "random" | "least-loaded";

export interface ReplayOptions {
  readonly trace: readonly TraceRequest[];
  readonly policy: ReplayPolicy;
  readonly workers: number;
  /** Arrival-rate multiplier: 2 replays the trace twice as fast. Default 1. */
  readonly speedup?: number;
  /** Engine KV block size. Default 64. */
  readonly blockSize?: number;
  /** KV capacity per worker, in blocks. Default 16384. */
  readonly kvBlocks?: number;
  /** Longest prompt plus completion a worker takes. Default 131072 (Mooncake's traces reach ~122k). */
  readonly contextLength?: number;
  /** Tokens per trace hash id. Default 512. */
  readonly traceBlockSize?: number;
  readonly timing?: TimingModel;
  /** Seeds every random choice. Default 1. */
  readonly seed?: number;
  /** Called now and then with (requests finished, requests in all). */
  readonly onProgress?: (done: number, total: number) => void;
  /** Receives every completed request's TTFT in ms (for charts). */
  readonly ttftSink?: number[];
}

export interface ReplayResult {
  readonly policy: ReplayPolicy;
  readonly requests: number;
  readonly completed: number;
  /** Prompt tokens served from a worker's prefix cache / all prompt tokens. */
  readonly hit_rate: number;
  readonly ttft_ms: Summary;
  readonly itl_ms: Summary;
  readonly throughput_tok_s: number;
  readonly sim_seconds: number;
  readonly wall_seconds: number;
}

/**
 * Replays a trace through the real routing policies and KV index and N mocker engines, in virtual
 * time: nothing sleeps, so an hour of traffic takes as long as the computation does.
 */
export async function replay(options: ReplayOptions): Promise<ReplayResult> {
  const started = performance.now();
  const clock = new VirtualClock();
  const blockSize = options.blockSize ?? 64;
  const speedup = options.speedup ?? 1;
  const traceBlockSize = options.traceBlockSize ?? 512;
  const rng = new SeededRandom(options.seed ?? 1);
  const engines = Array.from(
    { length: options.workers },
    () =>
      new MockerEngine({
        clock,
        blockSize,
        kvBlocks: options.kvBlocks ?? 16384,
        contextLength: options.contextLength ?? 131072,
        ...(options.timing ? { timing: options.timing } : {}),
      }),
  );
  const indexer = new KvIndexer({ logger: silentLogger, blockSize });
  const activeLoad = new ActiveLoad({ routerId: "replay", clock });
  const views = engines.map((engine, i) => {
    const id = `worker-${String(i).padStart(4, "0")}`;
    let eventId = 0;
    engine.onKvEvents((events) => indexer.apply({ type: "kv-event-batch", workerId: id, eventId: ++eventId, events }));
    return { id, card: modelCardFor(engine.info, "replay", "aggregated"), inflight: 0, published: undefined } as {
      id: string;
      card: WorkerView["card"];
      inflight: number;
      published: WorkerView["published"];
    };
  });
  const policy: RoutingPolicy =
    options.policy === "kv"
      ? kvPolicy({ indexer, blockSize, activeLoad, random: () => rng.next() })
      : options.policy === "kv-approx"
        ? kvPolicy({ indexer: new ApproximateIndex({ clock, blockSize }), blockSize, activeLoad, random: () => rng.next() })
        : options.policy === "random"
          ? randomPolicy(() => rng.next())
          : createBasicPolicy(options.policy);

  const ttft: number[] = options.ttftSink ?? [];
  const itl: number[] = [];
  let promptTokens = 0;
  let cachedTokens = 0;
  let outputTokens = 0;
  let completed = 0;
  let finished = 0;
  const total = options.trace.length;

  const serve = async (request: TraceRequest, index: number): Promise<void> => {
    const tokenIds = synthesizeTokens(request, traceBlockSize, 32000, index);
    const route = { model: "replay", tokenIds };
    const chosen = policy.select(views, route);
    const view = views.find((v) => v.id === chosen.id) as (typeof views)[number];
    const engine = engines[views.indexOf(view)] as MockerEngine;
    view.inflight++;
    const overlap = policy.overlapBlocks?.(view.id, route) ?? 0;
    const blocks = Math.ceil(tokenIds.length / blockSize);
    activeLoad.add(String(index), view.id, Math.max(0, tokenIds.length - overlap * blockSize), blocks);
    policy.onRouted?.(view.id, route);
    const arrival = clock.now();
    let first = -1;
    let last = -1;
    let count = 0;
    const generate: GenerateRequest = {
      type: "generate-request",
      requestId: String(index),
      model: "replay",
      tokenIds,
      sampling: { temperature: 0 },
      maxTokens: request.outputLength,
    };
    try {
      for await (const item of engine.generate(generate, { signal: new AbortController().signal })) {
        if (item.type === "token-delta") {
          if (first < 0) {
            first = clock.now();
            activeLoad.prefillDone(String(index));
            policy.onFirstToken?.(view.id, route);
          }
          last = clock.now();
          count += item.tokenIds.length;
        } else if (item.finishReason === "length" || item.finishReason === "stop") {
          completed++;
          promptTokens += item.promptTokens;
          cachedTokens += item.cachedTokens;
          outputTokens += item.completionTokens;
          ttft.push(first - arrival);
          if (count > 1) itl.push((last - first) / (count - 1));
        }
      }
    } catch {
      // A request the engine refuses (longer than its context or its cache) counts as not completed.
    } finally {
      view.inflight--;
      activeLoad.free(String(index));
      policy.onFinished?.(view.id, route);
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
  await Promise.all(engines.map((e) => e.close()));
  const simSeconds = clock.now() / 1000;
  return {
    policy: options.policy,
    requests: total,
    completed,
    hit_rate: promptTokens === 0 ? 0 : cachedTokens / promptTokens,
    ttft_ms: summarize(ttft),
    itl_ms: summarize(itl),
    throughput_tok_s: simSeconds === 0 ? 0 : outputTokens / simSeconds,
    sim_seconds: simSeconds,
    wall_seconds: (performance.now() - started) / 1000,
  };
}
