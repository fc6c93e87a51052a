import {
  ArmatureError,
  type FinishReason,
  type GenerateRequest,
  type GenerateResponse,
  hashBlocks,
  type KvCosts,
  type KvEvent,
} from "../../protocol/index.js";
import { type Clock, RealClock } from "../../runtime/index.js";
import { BYTE_SPECIAL_TOKENS, ByteTokenizer } from "../byte-tokenizer.js";
import {
  type Engine,
  type EngineInfo,
  type EngineLoad,
  exportFromToken,
  type GenerateOptions,
  type PrefillResult,
} from "../engine.js";
import { CHATML_TEMPLATE } from "../tiny-model/tiny-model.js";
import { BlockManager } from "./block-manager.js";
import { HostTier } from "./host-tier.js";
import { KvTier } from "./kv-tier.js";
import { LOWER_TIERS, type TierCounts } from "./lower-tiers.js";
import { MockSequence } from "./mock-sequence.js";
import { MockText } from "./mock-text.js";
import type { ObjectTier } from "./object-tier.js";
import { MockScheduler, type SchedulingPolicy } from "./scheduler.js";
import { modelledKvCosts, onboardingPays } from "./tier-costs.js";
import { polynomialTimingModel, type TimingModel } from "./timing-model.js";

export interface MockerEngineOptions {
  readonly clock?: Clock;
  /** KV capacity in blocks. Default 16384 (Dynamo's mocker). */
  readonly kvBlocks?: number;
  /** Tokens per block. Default 64. */
  readonly blockSize?: number;
  /** Default 8192. */
  readonly maxBatchedTokens?: number;
  /** Default 256. */
  readonly maxSequences?: number;
  /** How the engine orders what waits and what it preempts (vLLM's `--scheduling-policy`). Default `fcfs`. */
  readonly schedulingPolicy?: SchedulingPolicy;
  /** Default 32768. */
  readonly contextLength?: number;
  /** Divides every modelled duration. Default 1. */
  readonly speedupRatio?: number;
  /** Default: Dynamo's polynomial model at `speedupRatio`. */
  readonly timing?: TimingModel;
  /** KV bytes per token a disaggregated handoff moves. Default 131072 (Llama 3 8B, FP16). */
  readonly kvBytesPerToken?: number;
  /** Host-tier (pinned host memory) capacity in blocks; 0, the default, means none. */
  readonly hostKvBlocks?: number;
  /** Host-to-device copy bandwidth for onboarding, GB/s. Default 25 (PCIe 5 x16, in practice). */
  readonly hostGbps?: number;
  /**
   * Disk-tier (local NVMe) capacity in blocks; 0, the default, means none. A block goes there only
   * from its second use on (KVBM's frequency filter), from the host tier or else the device.
   */
  readonly diskKvBlocks?: number;
  /** Disk-to-device bandwidth for onboarding, GB/s. Default 5 (an NVMe drive). */
  readonly diskGbps?: number;
  /**
   * An object tier (remote object store) shared with other engines: every registered block is
   * written through, and any engine onboards from it at its bandwidth. Its block size must match.
   */
  readonly objectTier?: ObjectTier;
}

interface Pending {
  tokens: number[];
  end: FinishReason | "failed" | undefined;
  wake: (() => void) | undefined;
}

/**
 * A simulated vLLM-like engine: real scheduling and prefix caching, modelled time, deterministic
 * text over the byte tokenizer. It lets routing and scaling be tested with many workers on one
 * machine, live or in virtual time.
 */
export class MockerEngine implements Engine {
  readonly info: EngineInfo;
  readonly #blocks: BlockManager;
  readonly #scheduler: MockScheduler;
  readonly #pending = new Map<MockSequence, Pending>();
  readonly #listeners = new Set<(events: readonly KvEvent[]) => void>();
  readonly #tierListeners = new Set<(requestId: string, tokens: Readonly<TierCounts>) => void>();
  readonly #text: MockText;
  readonly #clock: Clock;
  readonly #kvBytesPerToken: number;
  /** What recomputing a token and onboarding its KV cost here, from the timing model and tier bandwidths. */
  readonly #kvCosts: KvCosts | undefined;
  #closed = false;

  constructor(options: MockerEngineOptions = {}) {
    const blockSize = options.blockSize ?? 64;
    const kvBlocks = options.kvBlocks ?? 16384;
    this.#kvBytesPerToken = options.kvBytesPerToken ?? 131072;
    this.info = {
      kind: "mocker",
      blockSize,
      totalKvBlocks: kvBlocks,
      maxBatchedTokens: options.maxBatchedTokens ?? 8192,
      maxSequences: options.maxSequences ?? 256,
      contextLength: options.contextLength ?? 32768,
      tokenizer: { kind: "bytes" },
      chatTemplate: CHATML_TEMPLATE,
      eosTokenIds: [ByteTokenizer.endOfText, ByteTokenizer.endOfTurn],
      bosToken: BYTE_SPECIAL_TOKENS[0],
      eosToken: BYTE_SPECIAL_TOKENS[0],
      publishesKvEvents: true,
      kvBytesPerToken: this.#kvBytesPerToken,
    };
    this.#text = new MockText(new ByteTokenizer());
    this.#clock = options.clock ?? new RealClock();
    const emit = (events: KvEvent[]): void => {
      for (const listener of this.#listeners) listener(events);
    };
    const hostBlocks = options.hostKvBlocks ?? 0;
    const diskBlocks = options.diskKvBlocks ?? 0;
    const object = options.objectTier;
    if (object && object.blockSize !== blockSize) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `the shared object tier holds blocks of ${object.blockSize} tokens; this engine's blockSize is ${blockSize}`,
      );
    }
    const speedup = options.speedupRatio ?? 1;
    const gbps: TierCounts = { host: options.hostGbps ?? 25, disk: options.diskGbps ?? 5, object: object?.gbps ?? 1 };
    const blockBytes = blockSize * this.#kvBytesPerToken;
    const timing = options.timing ?? polynomialTimingModel(speedup);
    const present = { host: hostBlocks > 0, disk: diskBlocks > 0, object: object !== undefined };
    const costs =
      present.host || present.disk || present.object
        ? modelledKvCosts(timing, this.info.maxBatchedTokens, gbps, present, speedup)
        : undefined;
    this.#kvCosts = costs;
    // Judged once: the modelled costs never change. A tier slower than recomputing is never read.
    const unread = new Set(costs ? LOWER_TIERS.filter((tier) => !onboardingPays(costs, tier, this.#kvBytesPerToken)) : []);
    this.#blocks = new BlockManager(kvBlocks, blockSize, emit, {
      host: present.host ? new HostTier(hostBlocks, blockSize, emit) : undefined,
      disk: present.disk ? new KvTier("disk", diskBlocks, blockSize, emit) : undefined,
      object,
      onboards: unread.size > 0 ? (tier) => !unread.has(tier) : undefined,
    });
    this.#scheduler = new MockScheduler({
      clock: this.#clock,
      blocks: this.#blocks,
      timing,
      // Each tier's blocks take their bytes over its bandwidth (GB/s = 1e6 bytes per ms), one after the other.
      onboardMs: (blocks) => LOWER_TIERS.reduce((ms, tier) => ms + (blocks[tier] * blockBytes) / (gbps[tier] * 1e6), 0) / speedup,
      maxBatchedTokens: this.info.maxBatchedTokens,
      maxSequences: this.info.maxSequences,
      policy: options.schedulingPolicy ?? "fcfs",
      nextToken: (s) => this.#text.tokenAt(s.prompt, s.promptLength, s.generated),
      onProgress: (s, event) => this.#progress(s, event),
    });
  }

  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Calls `listener` as each request ends (not the decode half of a disaggregated one) with the
   * prompt tokens it took from each lower tier; request-end reports only the host's part.
   */
  onTierHits(listener: (requestId: string, tokens: Readonly<TierCounts>) => void): () => void {
    this.#tierListeners.add(listener);
    return () => this.#tierListeners.delete(listener);
  }

  load(): EngineLoad {
    return {
      activeRequests: this.#scheduler.runningCount,
      waitingRequests: this.#scheduler.waitingCount,
      activeKvBlocks: this.#blocks.activeBlocks,
      totalKvBlocks: this.info.totalKvBlocks,
      ...(this.#kvCosts ? { kvCosts: this.#kvCosts } : {}),
    };
  }

  /**
   * Prefill phase: the scheduler computes the prompt and one token; the KV stays as cached blocks.
   * The modelled export leaves out the blocks the decode worker is said to hold (`decodeHeldTokens`).
   */
  async prefill(
    request: GenerateRequest,
    options: { signal: AbortSignal; decodeHeldTokens?: number | undefined },
  ): Promise<PrefillResult> {
    let firstToken: number | undefined;
    let cachedTokens = 0;
    let hostCachedTokens: number | undefined;
    for await (const item of this.generate({ ...request, maxTokens: 1 }, { signal: options.signal })) {
      if (item.type === "token-delta") firstToken ??= item.tokenIds[0];
      else ({ cachedTokens, hostCachedTokens } = item);
    }
    if (options.signal.aborted) throw new ArmatureError("REQUEST_CANCELLED", "the prefill was cancelled");
    const promptTokens = request.tokenIds.length;
    const fromToken = exportFromToken(options.decodeHeldTokens, promptTokens, this.info.blockSize);
    const bytes = (promptTokens - fromToken) * this.#kvBytesPerToken;
    const part = fromToken > 0 ? { fromToken, wholeBytes: promptTokens * this.#kvBytesPerToken } : {};
    const kv = firstToken === undefined ? undefined : ({ format: "modelled", bytes, ...part } as const);
    return { firstToken, cachedTokens, kv, ...(hostCachedTokens ? { hostCachedTokens } : {}) };
  }

  async *generate(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<GenerateResponse> {
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed", { retryable: true });
    if (request.tokenIds.length === 0)
      throw new ArmatureError("REQUEST_INVALID", "the prompt has no tokens", { param: "prompt" });
    if (request.tokenIds.length >= this.info.contextLength) {
      throw new ArmatureError(
        "PROMPT_TOO_LONG",
        `the prompt has ${request.tokenIds.length} tokens; this model's context holds ${this.info.contextLength}`,
        { param: "messages" },
      );
    }
    const maxTokens = Math.max(1, Math.min(request.maxTokens, this.info.contextLength - request.tokenIds.length));
    const sequence = new MockSequence(request.requestId, request.tokenIds, maxTokens, request.priority ?? 0);
    const imported = options.importedKv;
    if (imported?.format === "modelled") {
      // The handoff's bytes take their modelled time to arrive; then the prompt needs no compute.
      await this.#clock.sleep(imported.transferMs, options.signal).catch(() => undefined);
      const held = imported.fromToken ? this.#heldPrefixTokens(request.tokenIds, imported.fromToken) : 0;
      if (held < (imported.fromToken ?? 0)) {
        throw new ArmatureError(
          "TRANSFER_FAILED",
          `KV import refused: this worker no longer holds the prompt's first ${imported.fromToken} tokens (${held}); the prompt is prefilled here`,
          { retryable: true },
        );
      }
      sequence.importedFirstToken = imported.firstToken;
    } else if (imported) {
      throw new ArmatureError("TRANSFER_FAILED", `the mocker cannot import ${imported.format} KV`, { retryable: true });
    }
    const pending: Pending = { tokens: [], end: undefined, wake: undefined };
    /** Tokens sent so far; where a stop token (`stopTokenIds`) ended the output. */
    let delivered = 0;
    let stoppedAfter: number | undefined;
    this.#pending.set(sequence, pending);
    const onAbort = (): void => {
      sequence.cancelled = true;
      this.#scheduler.poke();
    };
    options.signal.addEventListener("abort", onAbort, { once: true });
    this.#scheduler.enqueue(sequence);
    try {
      for (;;) {
        if (pending.tokens.length === 0 && pending.end === undefined) {
          await new Promise<void>((resolve) => {
            pending.wake = resolve;
          });
          pending.wake = undefined;
        }
        if (pending.tokens.length > 0 && stoppedAfter === undefined) {
          const tokens = pending.tokens.splice(0);
          const stopAt = stopTokenIndex(request, tokens, delivered);
          delivered += tokens.length;
          if (stopAt === undefined) {
            yield { type: "token-delta", tokenIds: tokens };
            continue;
          }
          yield { type: "token-delta", tokenIds: tokens.slice(0, stopAt + 1) };
          stoppedAfter = delivered - tokens.length + stopAt + 1;
          onAbort(); // the scheduler drops the sequence; its later tokens are not sent
        }
        if (pending.end === "failed" && stoppedAfter === undefined) {
          throw new ArmatureError(
            this.#closed ? "ENGINE_CLOSED" : "REQUEST_INVALID",
            this.#closed ? "engine closed" : `the request needs more KV blocks than this worker has (${this.info.totalKvBlocks})`,
            { retryable: this.#closed },
          );
        }
        const finishReason: FinishReason = stoppedAfter !== undefined ? "stop" : sequence.cancelled ? "cancelled" : "length";
        if (sequence.importedFirstToken === undefined) {
          for (const listener of this.#tierListeners) listener(request.requestId, sequence.tierCachedTokens);
        }
        const hostCachedTokens = sequence.tierCachedTokens.host;
        yield {
          type: "request-end",
          finishReason,
          promptTokens: sequence.promptLength,
          completionTokens: stoppedAfter ?? sequence.generated,
          cachedTokens: sequence.cachedTokens,
          ...(hostCachedTokens > 0 ? { hostCachedTokens } : {}),
        };
        return;
      }
    } finally {
      options.signal.removeEventListener("abort", onAbort);
      if (pending.end === undefined) onAbort();
      this.#pending.delete(sequence);
    }
  }

  /** Of the prompt's first `upTo` tokens, those in leading full blocks some tier of this engine holds. */
  #heldPrefixTokens(tokens: readonly number[], upTo: number): number {
    const blockSize = this.info.blockSize;
    let held = 0;
    for (const hash of hashBlocks(tokens.slice(0, upTo), blockSize).sequence) {
      if (!this.#blocks.isCached(hash) && this.#blocks.lowerTierHolding(hash) === undefined) break;
      held += blockSize;
    }
    return held;
  }

  dumpKvEvents(): KvEvent[] {
    return this.#blocks.dump();
  }

  /** Drops every cached block nobody uses (emits `kv-cache-cleared`). */
  clearCache(): void {
    this.#blocks.clear();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#scheduler.stop();
  }

  #progress(sequence: MockSequence, event: "token" | "finished" | "failed"): void {
    const pending = this.#pending.get(sequence);
    if (!pending) return;
    if (event === "token") pending.tokens.push(sequence.output.at(-1) as number);
    else pending.end = event === "failed" ? "failed" : "length";
    pending.wake?.();
  }
}

/** Where in `tokens` (the output's tokens from `offset` on) a stop token ends it, from token `minTokens` on. */
function stopTokenIndex(request: GenerateRequest, tokens: readonly number[], offset: number): number | undefined {
  const stops = request.stopTokenIds;
  if (!stops || stops.length === 0) return undefined;
  const from = Math.max(0, (request.minTokens ?? 0) - offset);
  for (let i = from; i < tokens.length; i++) if (stops.includes(tokens[i] as number)) return i;
  return undefined;
}
