import { randomUUID } from "node:crypto";
import type { RequestTrace, RequestOutcome as TraceOutcome } from "../observability/index.js";
import {
  ArmatureError,
  type GenerateRequest,
  type GenerateResponse,
  type RequestEnd,
  type TokenDelta,
} from "../protocol/index.js";
import type { Router } from "../router/index.js";
import { AttachableSink, type Delivery, iterate, type StreamSink } from "../runtime/index.js";
import { refuseUnservableParams } from "./engine-support.js";
import type { RoutingDecision } from "./frontend-metrics.js";
import { IncrementalDetokenizer } from "./incremental-detokenizer.js";
import { describeLogprobs, type TokenLogprobEntry } from "./logprobs-format.js";
import { migratingStream } from "./migrating-stream.js";
import type { ModelPipeline } from "./model-pipelines.js";
import type { CommonParams } from "./requests/common-params.js";
import { StopMatcher } from "./stop-matcher.js";

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

export type GenerationEvent =
  | {
      readonly type: "text";
      readonly text: string;
      /** With `params.logprobs`: the tokens this text came from (the text may be "" while a character or stop string is held back). */
      readonly logprobs?: readonly TokenLogprobEntry[] | undefined;
    }
  | {
      readonly type: "end";
      readonly finishReason: "stop" | "length";
      /** The stop string that ended the text, when one did (Anthropic's `stop_sequence`). */
      readonly stopSequence?: string | undefined;
      readonly usage: Usage;
      /** Of the cached tokens, those the worker copied back from its host tier (absent: none). */
      readonly hostCachedTokens?: number | undefined;
    };

/** The last event of a generation. */
export type GenerationEnd = Extract<GenerationEvent, { type: "end" }>;

/** What a request's trace records of how its generation ended (cut short: why, from its abort reason). */
export function traceOutcome(end: GenerationEnd | undefined, abortReason: unknown): TraceOutcome {
  const usage = end?.usage;
  return {
    finishReason: end?.finishReason,
    promptTokens: usage?.prompt_tokens,
    completionTokens: usage?.completion_tokens,
    cachedTokens: usage?.prompt_tokens_details.cached_tokens,
    error: usage ? undefined : (abortReason ?? "the response ended without a result"),
  };
}

/** Hooks for latency metrics, called as token deltas arrive from the worker. */
export interface GenerationObserver {
  onTokens(count: number): void;
  /** Hears where the request was routed (the dashboard's routing decisions). */
  routed?(decision: Omit<RoutingDecision, "model">): void;
}

export interface Generation {
  readonly workerId: string;
  /** The worker that prefilled the request, when prefill and decode were split. */
  readonly prefillWorkerId: string | undefined;
  readonly overlapBlocks: number | undefined;
  readonly promptTokens: number;
  /**
   * Delivers text deltas (never splitting a character, never leaking past a stop string), then one
   * end event, into `sink` as the worker's tokens arrive; `stop()` cancels the generation. A
   * generation that was cancelled ends with no end event.
   */
  open(sink: StreamSink<GenerationEvent>): Delivery;
  /** The same events read as an async iterable; take them one way or the other, once. */
  readonly events: AsyncIterable<GenerationEvent>;
}

export interface GenerationInput {
  readonly pipeline: ModelPipeline;
  readonly tokenIds: readonly number[];
  readonly params: CommonParams;
  readonly signal: AbortSignal;
  /** Time left before the request's deadline, told to the worker so it stops too; undefined: none. */
  readonly timeoutMs?: number | undefined;
  /** Where the request waits among others for a worker (lower runs earlier); undefined: 0. */
  readonly priority?: number | undefined;
  readonly observer: GenerationObserver;
  /** Times a request may move to another worker when its worker fails mid-stream. */
  readonly migrationLimit: number;
  readonly onMigrate?: (from: string, to: string, generated: number) => void;
  /** The request's trace: its admission and routing are marked on it, its context sent to the worker. */
  readonly trace?: RequestTrace | undefined;
}

/**
 * Routes a tokenized request to a worker and turns its token stream into text events. Resolves
 * once the worker produced its first response, so failures before any output reject here (and
 * become plain HTTP errors) rather than in the middle of a stream.
 */
export async function startGeneration(router: Router, input: GenerationInput): Promise<Generation> {
  const { pipeline, tokenIds, params } = input;
  refuseUnservableParams(pipeline, params);
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: randomUUID(),
    // A client that names a LoRA adapter gets its base model's workers that serve the adapter.
    model: pipeline.card.name,
    ...(pipeline.lora === undefined ? {} : { lora: pipeline.lora }),
    tokenIds,
    sampling: params.sampling,
    maxTokens: resolveMaxTokens(pipeline, tokenIds.length, params.maxTokens),
    ignoreEos: params.ignoreEos,
    constraint: params.constraint,
    ...(params.logprobs ? { logprobs: params.logprobs } : {}),
    ...(params.minTokens ? { minTokens: params.minTokens } : {}),
    ...(params.stopTokenIds ? { stopTokenIds: params.stopTokenIds } : {}),
    ...(input.timeoutMs === undefined ? {} : { timeoutMs: Math.round(input.timeoutMs) }),
    ...(input.priority === undefined ? {} : { priority: input.priority }),
  };
  const call = await router.route(request, {
    signal: input.signal,
    pinnedWorkerId: params.pinnedWorkerId,
    overrides: params.routerOverrides,
    trace: input.trace,
  });
  input.trace?.routed(call);
  input.observer.routed?.({
    workerId: call.workerId,
    prefillWorkerId: call.prefillWorkerId,
    overlapBlocks: call.overlapBlocks,
    promptTokens: tokenIds.length,
    blockSize: pipeline.card.blockSize,
  });
  const started = new AttachableSink<GenerateResponse>();
  const upstream = migratingStream(
    router,
    request,
    call,
    {
      signal: input.signal,
      limit: input.migrationLimit,
      overrides: params.routerOverrides,
      onMigrate: input.onMigrate,
      trace: input.trace,
    },
    started,
  );
  try {
    await started.first;
  } catch (error) {
    await upstream.stop();
    throw error;
  }
  let events: AsyncIterable<GenerationEvent> | undefined;
  const open = (sink: StreamSink<GenerationEvent>): Delivery => {
    const text = new TextEvents(input, tokenIds.length, sink, upstream);
    started.attach(text);
    return text;
  };
  return {
    workerId: call.workerId,
    prefillWorkerId: call.prefillWorkerId,
    overlapBlocks: call.overlapBlocks,
    promptTokens: tokenIds.length,
    open,
    // Made when first asked for (a streamed answer is delivered into its writer and never read this
    // way), then the same iterable on every read.
    get events() {
      events ??= iterate(open);
      return events;
    },
  };
}

function resolveMaxTokens(pipeline: ModelPipeline, promptTokens: number, asked: number | undefined): number {
  const room = pipeline.card.contextLength - promptTokens;
  if (room <= 0) {
    throw new ArmatureError(
      "PROMPT_TOO_LONG",
      `This model's maximum context length is ${pipeline.card.contextLength} tokens; the prompt has ${promptTokens}. Shorten the messages.`,
      { param: "messages" },
    );
  }
  if (asked === undefined) return room;
  if (asked > room) {
    throw new ArmatureError(
      "REQUEST_INVALID",
      `max_tokens is too large: ${asked}. This model's maximum context length is ${pipeline.card.contextLength} tokens and the prompt has ${promptTokens}; ask for at most ${room}.`,
      { param: "max_tokens" },
    );
  }
  return asked;
}

/**
 * Turns a worker's token stream into text events: detokenized incrementally, held back at a
 * possible stop string, cut at a stop string found (the worker is then cancelled), closed by one
 * end event with the usage. A failure of its own (a tokenizer that throws) fails the sink and
 * cancels the worker; it never reaches the stream it reads.
 */
class TextEvents implements StreamSink<GenerateResponse>, Delivery {
  readonly #input: GenerationInput;
  readonly #promptTokens: number;
  readonly #down: StreamSink<GenerationEvent>;
  readonly #upstream: Delivery;
  readonly #detokenizer: IncrementalDetokenizer;
  readonly #stops: StopMatcher;
  #received = 0;
  #over = false;

  constructor(input: GenerationInput, promptTokens: number, down: StreamSink<GenerationEvent>, upstream: Delivery) {
    this.#input = input;
    this.#promptTokens = promptTokens;
    this.#down = down;
    this.#upstream = upstream;
    this.#detokenizer = new IncrementalDetokenizer(input.pipeline.tokenizer);
    this.#stops = new StopMatcher(input.params.stop);
  }

  get holding(): Promise<void> | undefined {
    return this.#down.holding;
  }

  push(item: GenerateResponse): void {
    if (this.#over) return;
    try {
      if (item.type === "token-delta") this.#tokens(item.tokenIds, item.logprobs);
      else this.#end(item);
    } catch (error) {
      this.fail(error);
      void this.#upstream.stop();
    }
  }

  end(): void {
    if (this.#over) return;
    // The worker's stream ended without its request-end (a stop string ends this one first).
    this.fail(new ArmatureError("WORKER_UNAVAILABLE", "the worker's stream ended before the request did", { retryable: true }));
  }

  fail(error: unknown): void {
    if (this.#over) return;
    this.#over = true;
    this.#down.fail(error);
  }

  async stop(): Promise<void> {
    this.#over = true;
    await this.#upstream.stop();
  }

  #tokens(tokenIds: readonly number[], logprobs: TokenDelta["logprobs"]): void {
    const input = this.#input;
    this.#received += tokenIds.length;
    input.observer.onTokens(tokenIds.length);
    const { text, stopped } = this.#stops.push(this.#detokenizer.push(tokenIds));
    const described =
      logprobs && describeLogprobs(input.pipeline.tokenizer, tokenIds, logprobs, input.params.returnTokensAsTokenIds);
    if (described) this.#down.push({ type: "text", text, logprobs: described });
    else if (text !== "") this.#down.push({ type: "text", text });
    if (stopped) {
      this.#finish("stop", 0, undefined);
      void this.#upstream.stop();
    }
  }

  #end(end: RequestEnd): void {
    this.#input.trace?.ending();
    if (end.finishReason === "error") {
      throw new ArmatureError("ENGINE_FAILED", end.error?.message ?? "the worker failed this request");
    }
    if (end.finishReason === "cancelled") {
      this.#over = true;
      this.#down.end();
      return;
    }
    const stops = this.#stops;
    const rest = stops.push(this.#detokenizer.flush());
    const tail = rest.stopped ? rest.text : rest.text + stops.flush();
    if (tail !== "") this.#down.push({ type: "text", text: tail });
    this.#finish(end.finishReason, end.cachedTokens, end.hostCachedTokens);
  }

  #finish(finishReason: "stop" | "length", cached: number, hostCached: number | undefined): void {
    this.#over = true;
    const received = this.#received;
    const found = this.#stops.found;
    this.#down.push({
      type: "end",
      finishReason,
      usage: {
        prompt_tokens: this.#promptTokens,
        completion_tokens: received,
        total_tokens: this.#promptTokens + received,
        prompt_tokens_details: { cached_tokens: cached },
      },
      ...(hostCached ? { hostCachedTokens: hostCached } : {}),
      ...(found === undefined ? {} : { stopSequence: found }),
    });
    this.#down.end();
  }
}
