import { setMaxListeners } from "node:events";
import type { Engine, EngineInfo } from "../engines/index.js";
import type { DecodePoint, PrefillPoint } from "../planner/index.js";
import { ArmatureError } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";
import { type RequestTrace, runOnClock, type SweepRequests, traceRequest } from "./sweep-requests.js";

/** What the sweep measures with: the engine, the clock that stamps tokens, fresh requests, a stop signal. */
export interface MeasurementContext {
  readonly engine: Engine;
  readonly clock: Clock;
  readonly requests: SweepRequests;
  readonly signal: AbortSignal;
}

/** A prefill point with the TTFT of each run it is the median of. */
export interface PrefillMeasurement {
  readonly point: PrefillPoint;
  readonly ttftSamplesMs: readonly number[];
}

/** A decode point, how many tokens each request of its batch generated, and whether that batch ever decoded all together. */
export interface DecodeMeasurement {
  readonly point: DecodePoint;
  /** Tokens each request generated: `--output-tokens`, or more when the batch needed them (see `measureDecode`). */
  readonly outputTokens: number;
  /**
   * True when ITL and tokens/s come from the steady window (after the last request's first token,
   * up to the first request's last); false when requests overlapped too little for one and every
   * gap after each request's first token was used.
   */
  readonly steady: boolean;
}

/** Times a batch without a steady window is run again with twice the output tokens. */
const MAX_DOUBLINGS = 3;

/**
 * Runs `runs` requests of `inputTokens` unseen prompt tokens and 1 output token one after another;
 * TTFT is the median time from the call to the first token-delta, tokens/s is `inputTokens` over it.
 */
export async function measurePrefill(
  context: MeasurementContext,
  inputTokens: number,
  runs: number,
): Promise<PrefillMeasurement> {
  const { engine, clock, requests, signal } = context;
  const ttftSamplesMs: number[] = [];
  for (let run = 0; run < runs; run++) {
    const request = requests.next("prefill", inputTokens, 1);
    const trace = await runOnClock(clock, () => traceRequest(engine, request, clock, signal));
    ttftSamplesMs.push((trace.deltas[0]?.atMs ?? trace.endMs) - trace.startMs);
  }
  const ttftMs = median(ttftSamplesMs);
  if (!(ttftMs > 0)) {
    throw new ArmatureError("ENGINE_FAILED", `prefill of ${inputTokens} tokens took no measurable time (${ttftMs} ms)`);
  }
  return { point: { inputTokens, ttftMs, tokensPerSecond: (inputTokens / ttftMs) * 1000 }, ttftSamplesMs };
}

/**
 * Starts `concurrency` requests at once, each with an unseen prompt of `contextTokens − ⌊outputTokens/2⌋`
 * tokens and `outputTokens` to generate, so that the context averages `contextTokens` over the
 * decode (Dynamo's ISL + OSL/2). ITL is the time between token-deltas per token and tokens/s counts
 * every request's tokens, both over the steady window (`interTokenWindow`); KV usage is the peak of
 * `activeKvBlocks / totalKvBlocks`, sampled at each delta. When the batch has no steady window (the
 * first requests finished before the last one was prefilled), it runs again with twice the output
 * tokens, up to 3 times while the longer requests still fit the engine.
 */
export async function measureDecode(
  context: MeasurementContext,
  concurrency: number,
  contextTokens: number,
  outputTokens: number,
): Promise<DecodeMeasurement> {
  let output = outputTokens;
  for (let doublings = 0; ; doublings++) {
    const measured = await measureDecodeBatch(context, concurrency, contextTokens, output);
    const longer = output * 2;
    const canRetry =
      doublings < MAX_DOUBLINGS && decodeFits(context.engine.info, concurrency, contextTokens, longer) === undefined;
    if (measured.steady || !canRetry || contextTokens <= Math.floor(longer / 2)) return measured;
    output = longer;
  }
}

/**
 * Why `concurrency` requests of mean context `contextTokens`, generating `outputTokens` each, cannot
 * decode together on the engine (naming the flags that change it), or undefined when they can.
 */
export function decodeFits(
  info: EngineInfo,
  concurrency: number,
  contextTokens: number,
  outputTokens: number,
): string | undefined {
  const sequenceTokens = contextTokens - Math.floor(outputTokens / 2) + outputTokens;
  if (sequenceTokens > info.contextLength) {
    return `--context-lengths ${contextTokens} with --output-tokens ${outputTokens} needs ${sequenceTokens} tokens per sequence; the engine holds ${info.contextLength} (--context-size)`;
  }
  const blocks = concurrency * Math.ceil(sequenceTokens / info.blockSize);
  if (blocks > info.totalKvBlocks) {
    const flag = info.kind === "mocker" ? "raise --kv-blocks or " : "";
    return `--concurrency ${concurrency} at --context-lengths ${contextTokens} needs ${blocks} KV blocks; the engine has ${info.totalKvBlocks} (${flag}lower either flag)`;
  }
  return undefined;
}

async function measureDecodeBatch(
  context: MeasurementContext,
  concurrency: number,
  contextTokens: number,
  outputTokens: number,
): Promise<DecodeMeasurement> {
  const { engine, clock, requests } = context;
  const promptTokens = contextTokens - Math.floor(outputTokens / 2);
  let peakKvUsage = 0;
  const sampleKv = (): void => {
    const load = engine.load();
    if (load.totalKvBlocks > 0) peakKvUsage = Math.max(peakKvUsage, load.activeKvBlocks / load.totalKvBlocks);
  };
  const { batch, signal } = batchSignal(context, concurrency);
  const traces = await runOnClock(clock, () =>
    Promise.all(
      Array.from({ length: concurrency }, () =>
        traceRequest(engine, requests.next("decode", promptTokens, outputTokens), clock, signal, sampleKv).catch(
          (error: unknown) => {
            batch.abort();
            throw error;
          },
        ),
      ),
    ),
  );
  const window = interTokenWindow(traces);
  if (!(window.itlMs > 0 && window.tokensPerSecond > 0)) {
    throw new ArmatureError(
      "ENGINE_FAILED",
      `decode at concurrency ${concurrency}, context ${contextTokens} showed no time between tokens; raise --output-tokens`,
    );
  }
  return {
    point: {
      concurrency,
      contextTokens,
      itlMs: window.itlMs,
      tokensPerSecond: window.tokensPerSecond,
      kvUsage: Math.min(1, peakKvUsage),
    },
    outputTokens,
    steady: window.steady,
  };
}

/**
 * ITL and output tokens/s of a batch of requests. Only the steady window counts, from the moment
 * the last request got its first token to the moment the first one got its last: before it, the
 * batch still prefills; after it, it shrinks. Without such a window, every gap after each request's
 * first token counts, over the span from the earliest first token to the last token.
 */
export function interTokenWindow(traces: readonly RequestTrace[]): { itlMs: number; tokensPerSecond: number; steady: boolean } {
  const firsts = traces.map((t) => t.deltas[0]?.atMs ?? t.endMs);
  const lasts = traces.map((t) => t.deltas.at(-1)?.atMs ?? t.endMs);
  const steadyFrom = Math.max(...firsts);
  const steadyTo = Math.min(...lasts);
  const gaps = (from: number, to: number): { ms: number; tokens: number } => {
    let ms = 0;
    let tokens = 0;
    for (const trace of traces) {
      for (let k = 1; k < trace.deltas.length; k++) {
        const previous = trace.deltas[k - 1]!;
        const current = trace.deltas[k]!;
        if (previous.atMs < from || current.atMs > to) continue;
        ms += current.atMs - previous.atMs;
        tokens += current.tokens;
      }
    }
    return { ms, tokens };
  };
  const steady = gaps(steadyFrom, steadyTo);
  if (steady.tokens > 0 && steadyTo > steadyFrom) {
    return { itlMs: steady.ms / steady.tokens, tokensPerSecond: (steady.tokens / (steadyTo - steadyFrom)) * 1000, steady: true };
  }
  const from = Math.min(...firsts);
  const to = Math.max(...lasts);
  const all = gaps(from, to);
  return {
    itlMs: all.tokens > 0 ? all.ms / all.tokens : 0,
    tokensPerSecond: to > from ? (all.tokens / (to - from)) * 1000 : 0,
    steady: false,
  };
}

/** The median; the mean of the middle two for an even count. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/**
 * The signal a batch of `concurrency` requests runs under: the sweep's, and `batch`, which one failed
 * request aborts to stop the others.
 */
function batchSignal(context: MeasurementContext, concurrency: number): { batch: AbortController; signal: AbortSignal } {
  const batch = new AbortController();
  const signal = AbortSignal.any([context.signal, batch.signal]);
  // Every request of the batch listens on it: that many listeners is the design, not a leak.
  setMaxListeners(concurrency + 10, signal);
  return { batch, signal };
}

/** What `measureInterleaved` found: the prefill's share of the decode steps it joined, or why it could not tell. */
export type InterleavedMeasurement =
  | { readonly measured: true; readonly interleavedMs: number; readonly concurrency: number; readonly contextTokens: number }
  | { readonly measured: false; readonly reason: string };

/** Token gaps each decoding request shows before the prefill is sent: the median of them is its usual step. */
const WARM_GAPS = 4;

/**
 * What one prefill of `inputTokens` unseen tokens adds to the steps of a decode batch it joins (the
 * cost aggregated serving pays that a profile of prefills and decodes apart does not show).
 * `concurrency` requests start decoding as `measureDecode` starts them (mean context
 * `contextTokens`, `outputTokens` each); once each has shown `WARM_GAPS` gaps between tokens, one
 * request of `inputTokens` prompt tokens and one output token is sent. For each decoding request,
 * the gaps that end after the prefill was sent and no later than its first token are the steps it
 * shared (one, or several when the engine splits the prompt into chunks); each gap's excess over
 * that request's median gap before the prefill is summed. The result is the mean of those sums.
 * Not measured (with the reason) when a decoding request ended before the prefill's first token,
 * or when the prefill would not fit in the KV cache beside the batch.
 */
export async function measureInterleaved(
  context: MeasurementContext,
  inputTokens: number,
  concurrency: number,
  contextTokens: number,
  outputTokens: number,
): Promise<InterleavedMeasurement> {
  const { engine, clock, requests } = context;
  const info = engine.info;
  const promptTokens = contextTokens - Math.floor(outputTokens / 2);
  const batchBlocks = concurrency * Math.ceil((promptTokens + outputTokens) / info.blockSize);
  const prefillBlocks = Math.ceil((inputTokens + 1) / info.blockSize);
  if (batchBlocks + prefillBlocks > info.totalKvBlocks) {
    return {
      measured: false,
      reason: `a ${inputTokens}-token prefill does not fit in KV beside ${concurrency} decoding sequences`,
    };
  }
  if (outputTokens < WARM_GAPS + 3) {
    return {
      measured: false,
      reason: `--output-tokens ${outputTokens} leaves too few tokens to see a step before and during a prefill`,
    };
  }
  const { batch, signal } = batchSignal(context, concurrency);
  const deltas = Array.from({ length: concurrency }, () => 0);
  let sentAt: number | undefined;
  let prefill: Promise<RequestTrace> | undefined;
  const sendWhenWarm = (): void => {
    if (prefill || deltas.some((n) => n < WARM_GAPS + 1)) return;
    sentAt = clock.now();
    prefill = traceRequest(engine, requests.next("interleave", inputTokens, 1), clock, signal);
    // Handled at once (the batch stops), so a failure before the batch ends is no unhandled rejection.
    prefill.catch(() => batch.abort());
  };
  const fail = (error: unknown): never => {
    batch.abort();
    throw error;
  };
  const decoding = await runOnClock(clock, async () => {
    const traces = await Promise.all(
      deltas.map((_, i) =>
        traceRequest(engine, requests.next("decode", promptTokens, outputTokens), clock, signal, () => {
          deltas[i]!++;
          sendWhenWarm();
        }).catch(fail),
      ),
    );
    return { traces, prefill: await prefill };
  });
  const firstAt = decoding.prefill?.deltas[0]?.atMs;
  if (sentAt === undefined || firstAt === undefined) {
    return { measured: false, reason: `the batch ended before the ${inputTokens}-token prefill was sent; raise --output-tokens` };
  }
  const sums: number[] = [];
  for (const trace of decoding.traces) {
    const before: number[] = [];
    let excess = 0;
    let shared = 0;
    for (let k = 1; k < trace.deltas.length; k++) {
      const from = trace.deltas[k - 1]!.atMs;
      const to = trace.deltas[k]!.atMs;
      if (to <= sentAt) before.push(to - from);
      else if (to <= firstAt) {
        shared++;
        excess += to - from;
      }
    }
    if ((trace.deltas.at(-1)?.atMs ?? 0) < firstAt) {
      return {
        measured: false,
        reason: `a decoding request ended before the ${inputTokens}-token prefill's first token; raise --output-tokens`,
      };
    }
    sums.push(Math.max(0, excess - shared * median(before.slice(-WARM_GAPS))));
  }
  return { measured: true, interleavedMs: sums.reduce((a, b) => a + b, 0) / sums.length, concurrency, contextTokens };
}
