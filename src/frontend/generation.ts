import { randomUUID } from "node:crypto";
import type { RequestTrace, RequestOutcome as TraceOutcome } from "../observability/index.js";
import { ArmatureError, type GenerateRequest, type GenerateResponse } from "../protocol/index.js";
import type { Router } from "../router/index.js";
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
  /** Text deltas (never splitting a character, never leaking past a stop string), then one end. */
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
  const upstream = migratingStream(router, request, call, {
    signal: input.signal,
    limit: input.migrationLimit,
    overrides: params.routerOverrides,
    onMigrate: input.onMigrate,
    trace: input.trace,
  })[Symbol.asyncIterator]();
  let first: IteratorResult<GenerateResponse>;
  try {
    first = await upstream.next();
  } catch (error) {
    await upstream.return?.(undefined);
    throw error;
  }
  return {
    workerId: call.workerId,
    prefillWorkerId: call.prefillWorkerId,
    overlapBlocks: call.overlapBlocks,
    promptTokens: tokenIds.length,
    events: textEvents(first, upstream, input, tokenIds.length),
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

async function* textEvents(
  first: IteratorResult<GenerateResponse>,
  upstream: AsyncIterator<GenerateResponse>,
  input: GenerationInput,
  promptTokens: number,
): AsyncGenerator<GenerationEvent> {
  const detokenizer = new IncrementalDetokenizer(input.pipeline.tokenizer);
  const stops = new StopMatcher(input.params.stop);
  let received = 0;
  let cached = 0;
  let hostCached: number | undefined;
  let finishReason: "stop" | "length" = "stop";
  let ended = false;
  let stoppedByString = false;
  try {
    let next = first;
    while (!next.done) {
      const item = next.value;
      if (item.type === "token-delta") {
        received += item.tokenIds.length;
        input.observer.onTokens(item.tokenIds.length);
        const { text, stopped } = stops.push(detokenizer.push(item.tokenIds));
        const logprobs =
          item.logprobs &&
          describeLogprobs(input.pipeline.tokenizer, item.tokenIds, item.logprobs, input.params.returnTokensAsTokenIds);
        if (logprobs) yield { type: "text", text, logprobs };
        else if (text !== "") yield { type: "text", text };
        if (stopped) {
          finishReason = "stop";
          stoppedByString = true;
          break;
        }
      } else {
        ended = true;
        input.trace?.ending();
        cached = item.cachedTokens;
        hostCached = item.hostCachedTokens;
        if (item.finishReason === "error") {
          throw new ArmatureError("ENGINE_FAILED", item.error?.message ?? "the worker failed this request");
        }
        if (item.finishReason === "cancelled") return;
        finishReason = item.finishReason;
        const rest = stops.push(detokenizer.flush());
        const tail = rest.stopped ? rest.text : rest.text + stops.flush();
        if (tail !== "") yield { type: "text", text: tail };
        break;
      }
      next = await upstream.next();
    }
    if (!ended && !stoppedByString) {
      throw new ArmatureError("WORKER_UNAVAILABLE", "the worker's stream ended before the request did", { retryable: true });
    }
  } finally {
    // Always close the call: a worker stream is a generator whose cleanup (freeing the sequence,
    // the in-flight count) runs only when it is resumed or returned. After a `request-end` this
    // cancels nothing: `migratingStream` has read the worker's stream to its end before handing it on.
    await upstream.return?.(undefined);
  }
  yield {
    type: "end",
    finishReason,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: received,
      total_tokens: promptTokens + received,
      prompt_tokens_details: { cached_tokens: cached },
    },
    ...(hostCached ? { hostCachedTokens: hostCached } : {}),
    ...(stops.found === undefined ? {} : { stopSequence: stops.found }),
  };
}
