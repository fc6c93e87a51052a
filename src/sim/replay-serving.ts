import type { MockerEngine } from "../engines/index.js";
import { type GenerateRequest, hashBlocks } from "../protocol/index.js";
import type { VirtualClock } from "../runtime/index.js";
import { type CostModel, transferMs } from "../transfer/index.js";
import type { Assignment, ReplayPool } from "./replay-pool.js";
import type { ReplayRecorder } from "./replay-recorder.js";

/** How disaggregated replays decide and pay for the handoff. */
export interface DisaggregationModel {
  /** Prompts with fewer uncached tokens than this are prefilled on the decode worker. 0: never. */
  readonly thresholdTokens: number;
  /** Prefill on the decode worker while prefill workers hold this many requests each. */
  readonly maxPrefillQueue: number;
  /** The backend that carries KV between the pools. */
  readonly transfer: CostModel;
  readonly kvBytesPerToken: number;
}

/** Streams a generation from `engine`, recording its timing from `arrival`. */
async function stream(
  clock: VirtualClock,
  engine: MockerEngine,
  request: GenerateRequest,
  arrival: number,
  recorder: ReplayRecorder,
  decode: Assignment,
  options: Parameters<MockerEngine["generate"]>[1],
  prefilled: { cachedTokens: number; hostCachedTokens?: number | undefined } | undefined,
): Promise<void> {
  let first = -1;
  let last = -1;
  let count = 0;
  for await (const item of engine.generate(request, options)) {
    if (item.type === "token-delta") {
      if (first < 0) {
        first = clock.now();
        decode.prefillDone();
      }
      last = clock.now();
      count += item.tokenIds.length;
    } else if (item.finishReason === "length" || item.finishReason === "stop") {
      recorder.complete({
        requestId: request.requestId,
        ttftMs: first - arrival,
        itlMs: count > 1 ? (last - first) / (count - 1) : undefined,
        promptTokens: item.promptTokens,
        // Disaggregated: the prefill worker's cache hits count, not the decode worker's.
        cachedTokens: prefilled ? prefilled.cachedTokens : item.cachedTokens,
        hostCachedTokens: prefilled ? prefilled.hostCachedTokens : item.hostCachedTokens,
        outputTokens: item.completionTokens,
      });
    }
  }
}

/** One request on an aggregated pool: the chosen worker prefills and decodes. */
export async function serveAggregated(
  clock: VirtualClock,
  pool: ReplayPool,
  request: GenerateRequest,
  recorder: ReplayRecorder,
): Promise<void> {
  const arrival = clock.now();
  const worker = pool.assign(request.tokenIds, { prefillTokens: true });
  try {
    await stream(clock, worker.engine, request, arrival, recorder, worker, { signal: neverAborted() }, undefined);
  } catch {
    // A request the engine refuses (longer than its context or its cache) counts as not completed.
  } finally {
    worker.done();
  }
}

/**
 * One request on a disaggregated deployment: a prefill worker (by KV overlap) computes the prompt
 * and first token, the KV crosses to a decode worker (by load) in its modelled time, and the decode
 * worker generates the rest. Short uncached prompts and requests that meet a long prefill queue are
 * prefilled on the decode worker instead (conditional disaggregation).
 */
export async function serveDisaggregated(
  clock: VirtualClock,
  prefillPool: ReplayPool,
  decodePool: ReplayPool,
  request: GenerateRequest,
  recorder: ReplayRecorder,
  model: DisaggregationModel,
): Promise<void> {
  const arrival = clock.now();
  let local = prefillPool.inflightPerWorker >= model.maxPrefillQueue;
  if (!local && model.thresholdTokens > 0) {
    const blockSize = prefillPool.engines[0]?.info.blockSize ?? 64;
    const cached = prefillPool.bestCachedBlocks(hashBlocks(request.tokenIds, blockSize).local) * blockSize;
    local = request.tokenIds.length - cached < model.thresholdTokens;
  }
  if (local) {
    recorder.localPrefills++;
    await serveAggregated(clock, decodePool, request, recorder);
    return;
  }
  recorder.remotePrefills++;
  const prefill = prefillPool.assign(request.tokenIds, { prefillTokens: true });
  let result: Awaited<ReturnType<MockerEngine["prefill"]>>;
  try {
    result = await prefill.engine.prefill(request, { signal: neverAborted() });
  } catch {
    return;
  } finally {
    prefill.done();
  }
  if (result.firstToken === undefined) return;
  const decode = decodePool.assign(request.tokenIds, { prefillTokens: false });
  const bytes = request.tokenIds.length * model.kvBytesPerToken;
  const importedKv = {
    format: "modelled" as const,
    firstToken: result.firstToken,
    transferMs: transferMs(model.transfer, bytes),
  };
  try {
    await stream(clock, decode.engine, request, arrival, recorder, decode, { signal: neverAborted(), importedKv }, result);
  } catch {
    // Refused by the decode engine: not completed.
  } finally {
    decode.done();
  }
}

/** A fresh signal per call: engines add a listener to it, and replays make millions of calls. */
function neverAborted(): AbortSignal {
  return new AbortController().signal;
}
