import type { Router } from "../../router/index.js";
import { refuseUnservableParams } from "../engine-support.js";
import {
  type Generation,
  type GenerationEnd,
  type GenerationEvent,
  type GenerationInput,
  startGeneration,
  type Usage,
} from "../generation.js";
import type { TokenLogprobEntry } from "../logprobs-format.js";

/** A prompt of a multi-choice request: its tokens and, with `echo`, the text each choice starts with. */
export interface ChoicePrompt {
  readonly tokenIds: readonly number[];
  readonly echo?: string | undefined;
}

export interface ChoicesInput extends Omit<GenerationInput, "tokenIds"> {
  readonly prompts: readonly ChoicePrompt[];
  /** Choices returned per prompt. */
  readonly n: number;
  /** Generations per prompt (≥ n); above n, the n with the highest summed log-probability are returned. */
  readonly bestOf: number;
}

export type ChoiceEvent =
  | {
      readonly type: "text";
      readonly index: number;
      readonly text: string;
      readonly logprobs?: readonly TokenLogprobEntry[] | undefined;
    }
  | { readonly type: "finish"; readonly index: number; readonly finishReason: "stop" | "length" }
  | GenerationEnd;

export interface Choices {
  /** The first choice's generation (its worker names the response's headers). */
  readonly first: Generation;
  /** Every choice's text and finish, interleaved as they come (choice `index` = prompt × n + i), then one end. */
  readonly events: AsyncIterable<ChoiceEvent>;
}

/**
 * Runs `bestOf` generations of each prompt as separate requests, all at once: the KV router sends
 * each to the worker that holds most of its prompt, and a seeded request's choice i samples with
 * seed + i (as vLLM does), so choices differ yet repeat. Resolves when every generation has started;
 * if one fails to start, the others are cancelled and the error is thrown.
 */
export async function startChoices(router: Router, input: ChoicesInput): Promise<Choices> {
  // Before best_of's ranking asks the engine for log-probabilities the client did not.
  refuseUnservableParams(input.pipeline, { ...input.params, bestOf: input.bestOf });
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(input.signal.reason);
  input.signal.addEventListener("abort", onAbort, { once: true });
  if (input.signal.aborted) onAbort();
  const ranked = input.bestOf > input.n;
  const params = ranked && !input.params.logprobs ? { ...input.params, logprobs: { top: 0 } } : input.params;
  const starts = input.prompts.flatMap((prompt) =>
    Array.from({ length: input.bestOf }, (_, i) => {
      const seed = params.sampling.seed === undefined ? undefined : params.sampling.seed + i;
      return startGeneration(router, {
        ...input,
        tokenIds: prompt.tokenIds,
        params: { ...params, sampling: { ...params.sampling, seed } },
        signal: controller.signal,
      });
    }),
  );
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((s) => s.status === "rejected");
  const generations = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  if (failed) {
    controller.abort(failed.reason);
    // A started generation frees its worker's sequence only when its stream is read to the end.
    await Promise.allSettled(generations.map((g) => drain(g.events)));
    input.signal.removeEventListener("abort", onAbort);
    throw failed.reason;
  }
  const events = choiceEvents(generations, input, ranked, () => {
    input.signal.removeEventListener("abort", onAbort);
    if (!controller.signal.aborted) controller.abort();
  });
  return { first: generations[0] as Generation, events };
}

async function* choiceEvents(
  generations: readonly Generation[],
  input: ChoicesInput,
  ranked: boolean,
  cleanup: () => void,
): AsyncGenerator<ChoiceEvent> {
  const { bestOf, n, prompts } = input;
  const ends: (GenerationEnd | undefined)[] = generations.map(() => undefined);
  const buffered: ChoiceEvent[][] = generations.map(() => []);
  const sums = generations.map(() => 0);
  try {
    if (!ranked) {
      for (const [g, prompt] of prompts.flatMap((p, pi) => Array.from({ length: n }, (_, i) => [pi * n + i, p] as const))) {
        if (prompt.echo !== undefined) yield { type: "text", index: g, text: prompt.echo };
      }
    }
    for await (const { source, event } of merge(
      generations.map((g) => g.events),
      cleanup,
    )) {
      if (event.type === "end") {
        ends[source] = event;
        const finish: ChoiceEvent = { type: "finish", index: source, finishReason: event.finishReason };
        if (ranked) buffered[source]?.push(finish);
        else yield finish;
        continue;
      }
      const text: ChoiceEvent = { type: "text", index: source, text: event.text, logprobs: event.logprobs };
      for (const entry of event.logprobs ?? []) sums[source] = (sums[source] ?? 0) + entry.logprob;
      if (ranked) buffered[source]?.push(text);
      else yield text;
    }
    if (ends.some((e) => e === undefined)) return; // cut short: no end, as for one choice
    if (ranked) yield* bestChoices(buffered, sums, prompts.length, bestOf, n, input.params.logprobs !== undefined);
    yield combinedEnd(ends as GenerationEnd[], bestOf);
  } finally {
    cleanup();
  }
}

/** Per prompt, the `n` generations of `bestOf` with the highest summed log-probability, re-indexed prompt × n + rank. */
function* bestChoices(
  buffered: readonly ChoiceEvent[][],
  sums: readonly number[],
  promptCount: number,
  bestOf: number,
  n: number,
  keepLogprobs: boolean,
): Generator<ChoiceEvent> {
  for (let p = 0; p < promptCount; p++) {
    const candidates = Array.from({ length: bestOf }, (_, i) => p * bestOf + i);
    candidates.sort((a, b) => (sums[b] ?? 0) - (sums[a] ?? 0));
    for (const [rank, source] of candidates.slice(0, n).entries()) {
      const index = p * n + rank;
      for (const event of buffered[source] ?? []) {
        if (event.type === "finish") yield { ...event, index };
        else if (event.type === "text") yield { ...event, index, logprobs: keepLogprobs ? event.logprobs : undefined };
      }
    }
  }
}

/** Usage over the choices: each prompt counted once, every generated token counted (best_of's too). */
function combinedEnd(ends: readonly GenerationEnd[], perPrompt: number): GenerationEnd {
  let prompt = 0;
  let completion = 0;
  let cached = 0;
  let hostCached = 0;
  ends.forEach((end, g) => {
    completion += end.usage.completion_tokens;
    if (g % perPrompt !== 0) return;
    prompt += end.usage.prompt_tokens;
    cached += end.usage.prompt_tokens_details.cached_tokens;
    hostCached += end.hostCachedTokens ?? 0;
  });
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
  const first = ends[0] as GenerationEnd;
  return { type: "end", finishReason: first.finishReason, usage, ...(hostCached > 0 ? { hostCachedTokens: hostCached } : {}) };
}

/**
 * Events of several streams as each comes. A stream's failure, or the reader leaving, ends the merge:
 * `stop` cancels the others' generations first, so returning them does not wait for their tokens.
 */
async function* merge(
  streams: readonly AsyncIterable<GenerationEvent>[],
  stop: () => void,
): AsyncGenerator<{ source: number; event: GenerationEvent }> {
  const iterators = streams.map((s) => s[Symbol.asyncIterator]());
  const pending = new Map<number, Promise<{ source: number; result: IteratorResult<GenerationEvent> }>>();
  const pull = (source: number): void => {
    pending.set(
      source,
      (iterators[source] as AsyncIterator<GenerationEvent>).next().then((result) => ({ source, result })),
    );
  };
  for (let i = 0; i < iterators.length; i++) pull(i);
  let finished = false;
  try {
    while (pending.size > 0) {
      const { source, result } = await Promise.race(pending.values());
      if (result.done) {
        pending.delete(source);
        continue;
      }
      pull(source);
      yield { source, event: result.value };
    }
    finished = true;
  } finally {
    if (!finished) {
      stop();
      await Promise.allSettled(iterators.map((it) => it.return?.(undefined)));
    }
  }
}

async function drain(events: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of events) {
    // read to the end so the worker stream closes
  }
}
