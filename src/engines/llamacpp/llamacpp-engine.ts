import type { Llama, LlamaContext, LlamaGrammar, LlamaModel, Token } from "node-llama-cpp";
import { wantsKvbm } from "../../kvbm/index.js";
import {
  ArmatureError,
  type EmbedRequest,
  type FinishReason,
  type GenerateRequest,
  type GenerateResponse,
  type KvEvent,
} from "../../protocol/index.js";
import {
  type Engine,
  type EngineInfo,
  type EngineLoad,
  exportFromToken,
  type GenerateOptions,
  type ImportedKv,
  type PrefillOptions,
  type PrefillResult,
} from "../engine.js";
import { GrammarCache } from "./grammar-cache.js";
import { KvBlockTracker } from "./kv-block-tracker.js";
import { kvBytesPerToken } from "./kv-size.js";
import { exportState } from "./kv-suffix.js";
import { KvbmConnector } from "./kvbm-connector.js";
import { type ContextSettings, createContext, KV_ELEMENT_BYTES } from "./llama-context.js";
import { defaultThreads, loadedLlamaBindings, loadModel } from "./llama-runtime.js";
import { LlamaEmbedder } from "./llamacpp-embedder.js";
import type { LlamaCppEngineOptions } from "./llamacpp-engine-options.js";
import { LlamaRanker } from "./llamacpp-ranker.js";
import { LoraLanes, type SequenceLane } from "./lora-lanes.js";
import { modelTokens } from "./model-tokens.js";
import { RateMeter } from "./rate-meter.js";
import { RunningOffload } from "./running-offload.js";
import { type SampledToken, sampledTokens, tokenBiasFor } from "./sampled-tokens.js";
import { toEvaluateOptions } from "./sampling.js";
import { importHandoff } from "./sequence-import.js";
import { type SequenceSlot, SequenceSlots, sharedPrefixLength } from "./sequence-slots.js";
import { TokenPump } from "./token-pump.js";

export type { LlamaCppEngineOptions } from "./llamacpp-engine-options.js";

/**
 * Real inference through llama.cpp. Concurrent requests run on the context's sequences and are
 * merged into one batch per step by node-llama-cpp; a request reuses the cached prefix of the
 * free sequence that shares most of its prompt. A request for a LoRA adapter runs on the
 * sequences of the adapter's own context (`LoraLanes`).
 */
export class LlamaCppEngine implements Engine {
  readonly info: EngineInfo;
  readonly #model: LlamaModel;
  readonly #context: LlamaContext;
  readonly #slots: SequenceSlots;
  readonly #tracker: KvBlockTracker;
  /** The base model's sequences. */
  readonly #base: SequenceLane;
  readonly #loras: LoraLanes;
  readonly #listeners = new Set<(events: readonly KvEvent[]) => void>();
  readonly #grammars: GrammarCache;
  readonly #inflight = new Set<AbortController>();
  /** KV events of the start (disk blocks found again), kept for the first listener. */
  #unheard: KvEvent[] | undefined = [];
  #starting = true;
  #kvbm: KvbmConnector | undefined;
  /** Prompt tokens evaluated per second (prompts of 32 tokens or more). */
  readonly #prefillRate = new RateMeter(32);
  #closed = false;
  /** `POST /v1/embeddings`: its own llama.cpp context, made on the first request. */
  readonly #embedder: LlamaEmbedder;
  /** `POST /v1/rerank` and `/v1/score`, on a model that can rank: its own context, made on the first request. */
  readonly #ranker: LlamaRanker | undefined;
  readonly rank: Engine["rank"];

  private constructor(
    llama: Llama,
    model: LlamaModel,
    context: LlamaContext,
    info: EngineInfo,
    options: { readonly grammarCacheSize: number; readonly settings: ContextSettings; readonly maxLoras: number },
  ) {
    this.#grammars = new GrammarCache(llama, options.grammarCacheSize);
    this.#model = model;
    this.#context = context;
    this.info = info;
    const pooling = { contextSize: context.contextSize, threads: options.settings.threads };
    this.#embedder = new LlamaEmbedder(model, pooling);
    const ranker = LlamaRanker.supports(model) ? new LlamaRanker(model, pooling) : undefined;
    this.#ranker = ranker;
    this.rank = ranker && ((request, { signal }) => ranker.rank(request, signal));
    const sequences = Array.from({ length: context.totalSequences }, () => context.getSequence());
    this.#slots = new SequenceSlots(sequences);
    this.#tracker = new KvBlockTracker(info.blockSize);
    this.#base = { lora: undefined, slots: this.#slots, tracker: this.#tracker };
    this.#loras = new LoraLanes({
      model,
      context: options.settings,
      maxLoras: options.maxLoras,
      blockSize: info.blockSize,
      emit: (events) => this.#emit(events),
    });
  }

  static async create(options: LlamaCppEngineOptions): Promise<LlamaCppEngine> {
    const { llama, backend, model } = await loadModel(options);
    const threads = options.threads ?? defaultThreads(llama, options.workersInProcess ?? 1);
    const sequences = options.sequences ?? 4;
    const contextSize = Math.min(options.contextSizePerSequence ?? 2048, model.trainContextSize);
    const blockSize = options.blockSize ?? 16;
    const settings: ContextSettings = { ...options, contextSize, sequences, threads };
    const context = await createContext(model, settings);
    const info: EngineInfo = {
      kind: "llamacpp",
      backend,
      threads,
      blockSize,
      totalKvBlocks: sequences * Math.floor(context.contextSize / blockSize),
      maxBatchedTokens: context.batchSize,
      maxSequences: sequences,
      contextLength: context.contextSize,
      tokenizer: { kind: "gguf", path: options.modelPath },
      ...modelTokens(model),
      publishesKvEvents: true,
      kvBytesPerToken: kvBytesPerToken(model.fileInfo.metadata, KV_ELEMENT_BYTES[options.kvCacheType ?? "f16"]),
    };
    const engine = new LlamaCppEngine(llama, model, context, info, {
      grammarCacheSize: options.grammarCacheSize ?? 64,
      settings,
      maxLoras: options.maxLoras ?? 1,
    });
    try {
      for (const { name, path } of options.loras ?? []) await engine.#loras.add(name, path, `--lora ${name}=${path}`);
    } catch (error) {
      await engine.close();
      throw error;
    }
    if (options.kvbm && wantsKvbm(options.kvbm.settings)) {
      try {
        engine.#kvbm = await KvbmConnector.open({
          ...options.kvbm,
          modelPath: options.modelPath,
          probe: (engine.#slots.all[0] as SequenceSlot).sequence,
          probeToken: model.tokens.bos ?? 0,
          blockSize,
          emit: (events) => engine.#emit(events),
        });
      } catch (error) {
        await engine.close();
        throw error;
      }
    }
    engine.#starting = false;
    return engine;
  }

  /** The LoRA adapters served beside the base model. */
  get adapters(): LoraLanes {
    return this.#loras;
  }

  /** The loaded model (benchmarks compare against it directly). */
  get model(): LlamaModel {
    return this.#model;
  }

  /** Unit-length embeddings of the model (see `LlamaEmbedder` for pooling and memory). */
  embed(request: EmbedRequest, options: { readonly signal: AbortSignal }): AsyncIterable<Float32Array> {
    return this.#embedder.embed(request, options.signal);
  }

  dumpKvEvents(): KvEvent[] {
    const adapters = this.#loras.lanes().flatMap((lane) => lane.tracker.dump());
    return [...this.#tracker.dump(), ...adapters, ...(this.#kvbm?.manager.dump() ?? [])];
  }

  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void {
    this.#listeners.add(listener);
    const unheard = this.#unheard;
    this.#unheard = undefined;
    if (unheard && unheard.length > 0) listener(unheard);
    return () => this.#listeners.delete(listener);
  }

  /** The KV block manager, when tiers were asked for (tests and benchmarks read its state). */
  get kvbm(): KvbmConnector | undefined {
    return this.#kvbm;
  }

  load(): EngineLoad {
    let activeKvBlocks = 0;
    let activeRequests = 0;
    let waitingRequests = 0;
    for (const { slots } of [this.#base, ...this.#loras.lanes()]) {
      activeKvBlocks += slots.activeBlocks(this.info.blockSize);
      activeRequests += slots.busyCount;
      waitingRequests += slots.waitingCount;
    }
    const prefillTokensPerSecond = this.#prefillRate.rate;
    const onboardBytesPerSecond = this.#kvbm?.onboardBytesPerSecond();
    const resident = this.#loras.residentNames();
    return {
      activeRequests,
      waitingRequests,
      ...(resident.length > 0 ? { residentLoras: resident } : {}),
      activeKvBlocks,
      totalKvBlocks: this.info.totalKvBlocks,
      ...(prefillTokensPerSecond !== undefined || onboardBytesPerSecond
        ? { kvCosts: { prefillTokensPerSecond, onboardBytesPerSecond } }
        : {}),
    };
  }

  async *generate(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<GenerateResponse> {
    const tokens = request.tokenIds;
    this.#validate(request);
    const format = options.importedKv?.format;
    if (format !== undefined && format !== "llamacpp-sequence-state") {
      throw new ArmatureError("TRANSFER_FAILED", `llama.cpp cannot import ${format} KV`, { retryable: true });
    }
    const grammar = request.constraint ? await this.#grammars.get(request.constraint) : undefined;
    let last: GenerateResponse = end("cancelled", tokens.length, 0, 0);
    const adapter = request.lora === undefined ? undefined : await this.#loras.hold(request.lora, options.signal);
    const lane = adapter?.lane ?? this.#base;
    try {
      const held = await this.#hold(tokens, options.signal, lane);
      const kvbm = lane === this.#base ? this.#kvbm : undefined;
      const running =
        held.slot && kvbm?.offloadTiming === "as-filled"
          ? new RunningOffload(kvbm, held.slot.sequence, this.info.blockSize)
          : undefined;
      try {
        if (held.slot) {
          last = yield* this.#run(held.slot, lane, request, grammar, held.signal, options.importedKv, running);
          await running?.settled();
          // Write-through: what the request left on the device goes down the tiers before the sequence is reused.
          await kvbm?.offload(held.slot.sequence);
        }
      } finally {
        // A copy still running (the caller stopped reading) reads the sequence: it ends first.
        await running?.settled();
        held.release();
      }
    } finally {
      adapter?.release();
    }
    // The sequence is free before the caller sees the end, whether or not it reads on.
    yield last;
  }

  /**
   * Evaluates the prompt, samples the first token without evaluating it, and saves the sequence
   * state (prompt tokens and their KV) to `exportPath` for a decode worker to load: from the block
   * boundary at `decodeHeldTokens` on when the decode worker is said to hold the tokens before it.
   */
  async prefill(request: GenerateRequest, options: PrefillOptions): Promise<PrefillResult> {
    const tokens = request.tokenIds;
    this.#validate(request);
    if (request.constraint) {
      throw new ArmatureError("NOT_SUPPORTED", "constrained (response_format) requests are prefilled where they decode");
    }
    if (request.logprobs || request.sampling.logitBias?.length || request.minTokens) {
      // The first token's sampling and log-probabilities would be the prefill worker's to report.
      throw new ArmatureError("NOT_SUPPORTED", "logprobs, logit_bias and min_tokens requests are prefilled where they decode");
    }
    if (request.lora !== undefined) {
      throw new ArmatureError("NOT_SUPPORTED", "requests for a LoRA adapter are prefilled where they decode");
    }
    const held = await this.#hold(tokens, options.signal, this.#base);
    try {
      const slot = held.slot;
      if (!slot) throw new ArmatureError("REQUEST_CANCELLED", "the prefill was cancelled");
      const sequence = slot.sequence;
      const { reused, lowerTierTokens } = await this.#admit(slot, this.#base, tokens);
      const evaluation = sequence.evaluate(tokens.slice(reused) as Token[], {
        ...toEvaluateOptions(request.sampling, [], undefined),
        yieldEogToken: request.ignoreEos === true,
      });
      const first = await evaluation.next();
      // Ends the evaluation before the sampled token is evaluated: the state holds the prompt only.
      await evaluation.return(undefined);
      this.#emit(this.#tracker.update(slot.index, sequence.contextTokens));
      await this.#kvbm?.offload(sequence);
      const host = lowerTierTokens > 0 ? { hostCachedTokens: lowerTierTokens } : {};
      if (first.done) return { firstToken: undefined, cachedTokens: reused, kv: undefined, ...host };
      held.signal.throwIfAborted();
      const fromToken = exportFromToken(options.decodeHeldTokens, tokens.length, this.info.blockSize);
      const kv = await exportState(sequence, options.exportPath, fromToken, this.info.blockSize);
      return { firstToken: first.value, cachedTokens: reused, ...host, kv };
    } finally {
      held.release();
    }
  }

  #validate(request: GenerateRequest): void {
    const tokens = request.tokenIds;
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed", { retryable: true });
    if (tokens.length === 0) throw new ArmatureError("REQUEST_INVALID", "the prompt has no tokens", { param: "prompt" });
    if (tokens.length >= this.info.contextLength) {
      throw new ArmatureError(
        "PROMPT_TOO_LONG",
        `the prompt has ${tokens.length} tokens; this model's context holds ${this.info.contextLength}`,
        { param: "messages" },
      );
    }
  }

  /** Waits for a sequence (none when cancelled first); `release` frees it and the abort wiring. */
  async #hold(
    tokens: readonly number[],
    outer: AbortSignal,
    lane: SequenceLane,
  ): Promise<{ slot: SequenceSlot | undefined; signal: AbortSignal; release: () => void }> {
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(outer.reason);
    outer.addEventListener("abort", onAbort, { once: true });
    if (outer.aborted) onAbort();
    this.#inflight.add(controller);
    let slot: SequenceSlot | undefined;
    const release = (): void => {
      outer.removeEventListener("abort", onAbort);
      this.#inflight.delete(controller);
      if (slot) lane.slots.release(slot);
    };
    try {
      slot = await lane.slots.acquire(tokens, controller.signal);
    } catch (error) {
      if (!controller.signal.aborted) {
        release();
        throw error;
      }
    }
    return { slot, signal: controller.signal, release };
  }

  /**
   * Starts the sequence from the longest cached prefix of the prompt: the one it holds on the
   * device or a longer one the block manager loads from its tiers (`lowerTierTokens` of them).
   * At least one prompt token is left to evaluate: the next token's logits come from it. The tiers
   * hold the base model's KV only: an adapter's lane reuses what its own sequences hold.
   */
  async #admit(
    slot: SequenceSlot,
    lane: SequenceLane,
    tokens: readonly number[],
  ): Promise<{ reused: number; lowerTierTokens: number }> {
    const sequence = slot.sequence;
    let reused = Math.min(sharedPrefixLength(sequence.contextTokens, tokens), tokens.length - 1);
    let lowerTierTokens = 0;
    const kvbm = lane === this.#base ? this.#kvbm : undefined;
    const onboarded = await kvbm?.onboard(sequence, tokens, reused, {
      tokensPerSecond: this.#prefillRate.rate,
      kvBytesPerToken: this.info.kvBytesPerToken,
    });
    if (onboarded) {
      reused = onboarded.tokens;
      lowerTierTokens = onboarded.tokens;
    } else if (sequence.nextTokenIndex > reused) {
      // A failed onboarding leaves the sequence empty: keep only what it still shares with the prompt.
      reused = Math.min(reused, sharedPrefixLength(sequence.contextTokens, tokens));
      await sequence.eraseContextTokenRanges([{ start: reused, end: sequence.nextTokenIndex }]);
    }
    this.#emit(lane.tracker.update(slot.index, sequence.contextTokens));
    return { reused, lowerTierTokens };
  }

  async *#run(
    slot: SequenceSlot,
    lane: SequenceLane,
    request: GenerateRequest,
    grammar: LlamaGrammar | undefined,
    signal: AbortSignal,
    imported: ImportedKv | undefined,
    running: RunningOffload | undefined,
  ): AsyncGenerator<GenerateResponse, GenerateResponse> {
    const tokens = request.tokenIds;
    const sequence = slot.sequence;
    let reused: number;
    let lowerTierTokens = 0;
    if (imported?.format === "llamacpp-sequence-state") {
      const target = {
        sequence,
        kvbm: this.#kvbm,
        blockSize: this.info.blockSize,
        changed: (held: readonly number[]) => this.#emit(lane.tracker.update(slot.index, held)),
      };
      await importHandoff(target, tokens, imported.path, imported.fromToken);
      reused = tokens.length;
    } else {
      ({ reused, lowerTierTokens } = await this.#admit(slot, lane, tokens));
    }
    const budget = Math.min(request.maxTokens, this.info.contextLength - tokens.length);
    const generated: number[] = [];
    const grammarState = grammar
      ? new (loadedLlamaBindings().LlamaGrammarEvaluationState)({ model: this.#model, grammar })
      : undefined;
    const tokenBias = tokenBiasFor(this.#model, request, this.info.eosTokenIds ?? [], generated);
    const evaluateOptions = {
      ...toEvaluateOptions(request.sampling, generated, grammarState),
      ...(tokenBias ? { tokenBias } : {}),
      yieldEogToken: request.ignoreEos === true,
    };
    const stopTokens = new Set(request.stopTokenIds ?? []);
    let finish: FinishReason = "stop";
    let yielded = 0;
    let input = tokens.slice(reused);
    if (imported?.format === "llamacpp-sequence-state") {
      // The prefill worker sampled the first token; decoding goes on from it.
      generated.push(imported.firstToken);
      yielded = 1;
      yield { type: "token-delta", tokenIds: [imported.firstToken] };
      if (yielded >= budget) return end("length", tokens.length, yielded, reused, lowerTierTokens);
      input = [imported.firstToken];
    }
    const evaluating = performance.now();
    const pump = new TokenPump<SampledToken>(sampledTokens(sequence, input, evaluateOptions, request.logprobs), {
      capacity: 4,
      limit: budget - yielded,
      onToken: ({ token }) => {
        generated.push(token);
        running?.evaluated(sequence.nextTokenIndex);
        if (generated.length === 1) {
          if (!imported) this.#prefillRate.record(input.length, (performance.now() - evaluating) / 1000);
          this.#emit(lane.tracker.update(slot.index, tokens));
        }
      },
    });
    try {
      for (;;) {
        if (signal.aborted) {
          finish = "cancelled";
          break;
        }
        const sampled = await pump.next();
        if (sampled === undefined) break;
        yielded++;
        yield sampled.logprob
          ? { type: "token-delta", tokenIds: [sampled.token], logprobs: [sampled.logprob] }
          : { type: "token-delta", tokenIds: [sampled.token] };
        // min_tokens kept the stop tokens from being sampled before it.
        if (stopTokens.has(sampled.token)) break;
        if (yielded >= budget) {
          finish = "length";
          break;
        }
      }
      if (signal.aborted) finish = "cancelled";
    } finally {
      await pump.stop();
    }
    if (generated.length === 0) this.#emit(lane.tracker.update(slot.index, tokens));
    return end(finish, tokens.length, yielded, reused, lowerTierTokens);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#slots.close();
    for (const controller of this.#inflight) controller.abort(new ArmatureError("ENGINE_CLOSED", "engine closed"));
    await this.#loras.close();
    await this.#kvbm?.close();
    await this.#embedder.close();
    await this.#ranker?.close();
    await this.#context.dispose();
    await this.#model.dispose();
  }

  /** Compiled grammars held now (bounded by `grammarCacheSize`). */
  get cachedGrammars(): number {
    return this.#grammars.size;
  }

  #emit(events: readonly KvEvent[]): void {
    if (events.length === 0) return;
    if (this.#starting && this.#unheard) {
      this.#unheard.push(...events);
      return;
    }
    for (const listener of this.#listeners) listener(events);
  }
}

function end(
  finishReason: FinishReason,
  promptTokens: number,
  completionTokens: number,
  cachedTokens: number,
  lowerTierTokens = 0,
): GenerateResponse {
  // Tokens loaded back from the tiers below the device are reported as host-cached tokens.
  const host = lowerTierTokens > 0 ? { hostCachedTokens: lowerTierTokens } : {};
  return { type: "request-end", finishReason, promptTokens, completionTokens, cachedTokens, ...host };
}
