import type { RouteTrace } from "../observability/index.js";
import {
  ArmatureError,
  type GenerateRequest,
  type GenerateResponse,
  type KvHandoff,
  localBlockHashes,
  type RequestEnd,
} from "../protocol/index.js";
import type { KvIndexView } from "./kv-policy.js";
import type { WorkerView } from "./worker-view.js";

/** What the stage asks of the router among the prefill workers (a `Router` is one). */
export interface PrefillRouter {
  route(
    request: GenerateRequest,
    options: { signal: AbortSignal; trace?: RouteTrace | undefined },
  ): Promise<{
    readonly workerId: string;
    readonly overlapBlocks: number | undefined;
    readonly stream: AsyncIterable<GenerateResponse>;
  }>;
  eligibleWorkers(model: string): WorkerView[];
}

/** Where a request's prefill ran, for metrics and logs. */
export type PrefillOutcome =
  | "remote"
  | "local_no_prefill_worker"
  | "local_short_prompt"
  | "local_prefill_queue"
  | "local_constrained"
  | "local_prefill_failed"
  | "local_transfer_cost"
  | "ended_in_prefill";

/** What a remote prefill gave: where the KV waits (or the request's end), and who computed it. */
export type RemotePrefill = { readonly prefillWorkerId: string; readonly overlapBlocks: number | undefined } & (
  | { readonly handoff: KvHandoff; readonly end?: undefined }
  | { readonly end: RequestEnd }
);

export interface PrefillStageOptions {
  /** Routes among the prefill workers only (`roles: ["prefill"]`), KV-aware. */
  readonly router: PrefillRouter;
  /** Prompts with fewer uncached tokens than this are prefilled on the decode worker. Default 0 (never). */
  readonly thresholdTokens?: number;
  /** Prefill on the decode worker while the prefill workers hold this many requests each on average. Default unlimited. */
  readonly maxPrefillQueue?: number;
  /**
   * Prefill on the decode worker when moving the prompt's KV would take longer than this, by the
   * prefill workers' published TCP cost model and KV bytes per token. Default: no limit.
   */
  readonly maxTransferMs?: number | undefined;
  /** The KV index, to tell how much of a prompt the prefill workers already cache. */
  readonly index?: KvIndexView | undefined;
  /** Block size of a model whose size the index does not know. */
  readonly blockSize?: number;
  readonly onOutcome?: (outcome: PrefillOutcome) => void;
  /** Hears why a prefill failed (the request is then prefilled on its decode worker). */
  readonly onFailure?: (error: unknown) => void;
  /** Hears the end of every decode that started from a handoff (transfer metrics). */
  readonly onDecodeEnd?: (end: RequestEnd) => void;
}

/**
 * The first half of a disaggregated request (Dynamo's PrefillRouter): picks a prefill worker by
 * KV overlap, has it compute the prompt's KV and first token, and returns the handoff the decode
 * worker pulls. Returns nothing when the request should be prefilled where it decodes: no prefill
 * worker, a short uncached prompt, a long prefill queue, or a failed prefill.
 */
export class PrefillStage {
  readonly #o: PrefillStageOptions;

  constructor(options: PrefillStageOptions) {
    this.#o = options;
  }

  get onDecodeEnd(): ((end: RequestEnd) => void) | undefined {
    return this.#o.onDecodeEnd;
  }

  /**
   * The handoff, or the request's end when generation ended before a first token (an end-of-sequence
   * token came first), or nothing when the decode worker should prefill. `chooseDecodeWorker` is
   * called once the prefill is to run remotely (or earlier, for `maxTransferMs`): the prefill
   * worker is then told how much of the prompt that worker holds by the KV index (its device and
   * lower tiers), and exports only the rest. The prefill call carries `trace`'s context.
   */
  async run(
    request: GenerateRequest,
    signal: AbortSignal,
    chooseDecodeWorker?: () => Promise<string | undefined>,
    trace?: RouteTrace,
  ): Promise<RemotePrefill | undefined> {
    let held: Promise<number> | undefined;
    const decodeHeld = (): Promise<number> => {
      held ??= (chooseDecodeWorker?.() ?? Promise.resolve(undefined)).then((id) => this.#heldBy(id, request));
      return held;
    };
    const outcome = await this.#localReason(request, decodeHeld);
    if (outcome) {
      this.#o.onOutcome?.(outcome);
      return undefined;
    }
    const decodeHeldTokens = await decodeHeld();
    try {
      const disaggregation = { phase: "prefill" as const, ...(decodeHeldTokens > 0 ? { decodeHeldTokens } : {}) };
      const call = await this.#o.router.route({ ...request, maxTokens: 1, disaggregation }, { signal, trace });
      let end: RequestEnd | undefined;
      for await (const item of call.stream) if (item.type === "request-end") end = item;
      if (!end || end.finishReason === "error" || end.finishReason === "cancelled") {
        throw new ArmatureError("ENGINE_FAILED", end?.error?.message ?? "the prefill ended without a result", {
          retryable: true,
        });
      }
      const handoff = end.kvHandoff;
      if (!handoff) {
        this.#o.onOutcome?.("ended_in_prefill");
        return { prefillWorkerId: call.workerId, overlapBlocks: call.overlapBlocks, end: { ...end, kvHandoff: undefined } };
      }
      this.#o.onOutcome?.("remote");
      return { handoff, prefillWorkerId: call.workerId, overlapBlocks: call.overlapBlocks };
    } catch (error) {
      if (signal.aborted) throw error;
      // The prefill worker died, drained or refused: the decode worker prefills instead.
      this.#o.onOutcome?.("local_prefill_failed");
      this.#o.onFailure?.(error);
      return undefined;
    }
  }

  /**
   * Prompt tokens `workerId` holds by the KV index, in whole blocks: on its device, on a lower tier,
   * or on the external tier its model's workers share. It may be stale; the decode worker checks.
   */
  #heldBy(workerId: string | undefined, request: GenerateRequest): number {
    const { index } = this.#o;
    const blockSize = this.#blockSizeOf(request.model);
    if (workerId === undefined || !index || !blockSize) return 0;
    const {
      scores,
      lowerTierScores,
      sharedBlocks = 0,
    } = index.findMatches(localBlockHashes(request.tokenIds, blockSize, request.lora));
    return Math.max(scores.get(workerId) ?? 0, lowerTierScores?.get(workerId) ?? 0, sharedBlocks) * blockSize;
  }

  /** The block size the model's workers hash with (the index knows it), else the stage's. */
  #blockSizeOf(model: string): number | undefined {
    return this.#o.index?.blockSizeOf?.(model) ?? this.#o.blockSize;
  }

  async #localReason(request: GenerateRequest, decodeHeld: () => Promise<number>): Promise<PrefillOutcome | undefined> {
    const prefillWorkers = this.#o.router.eligibleWorkers(request.model);
    if (prefillWorkers.length === 0) return "local_no_prefill_worker";
    // The first token is sampled where the prompt is prefilled: a constrained, biased, min_tokens
    // or logprobs request's first token needs the decode worker's sampler settings and reports.
    if (request.constraint || request.logprobs || request.sampling.logitBias || request.minTokens) return "local_constrained";
    const threshold = this.#o.thresholdTokens ?? 0;
    if (threshold > 0) {
      let cachedBlocks = 0;
      const blockSize = this.#blockSizeOf(request.model);
      if (this.#o.index && blockSize) {
        const { scores } = this.#o.index.findMatches(localBlockHashes(request.tokenIds, blockSize, request.lora));
        for (const w of prefillWorkers) cachedBlocks = Math.max(cachedBlocks, scores.get(w.id) ?? 0);
      }
      const uncached = request.tokenIds.length - cachedBlocks * (blockSize ?? 0);
      if (uncached < threshold) return "local_short_prompt";
    }
    if (this.#o.maxTransferMs !== undefined) {
      // Only what the decode worker lacks crosses.
      const missing = request.tokenIds.length - (await decodeHeld());
      const fastest = Math.min(...prefillWorkers.map((w) => transferEstimateMs(w, missing)));
      if (fastest > this.#o.maxTransferMs) return "local_transfer_cost";
    }
    const maxQueue = this.#o.maxPrefillQueue ?? Number.POSITIVE_INFINITY;
    const queued = prefillWorkers.reduce((sum, w) => sum + w.inflight + (w.published?.waitingRequests ?? 0), 0);
    if (queued / prefillWorkers.length >= maxQueue) return "local_prefill_queue";
    return undefined;
  }
}

/**
 * Modelled milliseconds to move `tokens` prompt tokens' KV from `worker` over TCP (the backend
 * between hosts, the slowest one), from the cost model its transfer agent published; 0 when it
 * published none.
 */
export function transferEstimateMs(worker: WorkerView, tokens: number): number {
  const model = worker.transferAgent?.costModels?.tcp;
  const perToken = worker.card.kvBytesPerToken;
  if (!model || perToken === undefined) return 0;
  return model.alphaMs + (tokens * perToken) / model.bytesPerMs;
}
