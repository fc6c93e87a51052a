import type { Engine, EngineInfo } from "../engines/index.js";
import { type DecodePoint, PROFILE_VERSION, type PrefillPoint, parseProfile } from "../planner/index.js";
import { ArmatureError } from "../protocol/index.js";
import { type Clock, RealClock } from "../runtime/index.js";
import {
  type DecodeMeasurement,
  decodeFits,
  type InterleavedMeasurement,
  measureDecode,
  measureInterleaved,
  measurePrefill,
  type PrefillMeasurement,
} from "./point-measurements.js";
import type { ProfileDocument } from "./profile-document.js";
import { SweepRequests } from "./sweep-requests.js";

/** One measured point, as the sweep reports it while it runs. */
export type SweepProgress =
  | ({ readonly phase: "prefill" } & PrefillMeasurement)
  | ({ readonly phase: "decode" } & DecodeMeasurement)
  | ({ readonly phase: "interleave"; readonly inputTokens: number } & InterleavedMeasurement);

/** The decode batch a prefill joins when its interleaving is measured: at most this many sequences. */
const INTERLEAVE_CONCURRENCY = 8;

export interface ProfileSweepOptions {
  /** Prompt lengths of the prefill sweep (`--input-lengths`). Default: `defaultSweepAxes`. */
  readonly inputLengths?: readonly number[];
  /** Batch sizes of the decode sweep (`--concurrency`). Default: `defaultSweepAxes`. */
  readonly concurrency?: readonly number[];
  /** Mean context per sequence of the decode sweep (`--context-lengths`). Default: `defaultSweepAxes`. */
  readonly contextLengths?: readonly number[];
  /** Prefill runs per input length, TTFT is their median (`--requests-per-point`). Default 3. */
  readonly requestsPerPoint?: number;
  /** Tokens each decode request generates (`--output-tokens`); at least 2. Default 64. */
  readonly outputTokens?: number;
  /** Stamps the tokens. A `VirtualClock` is driven by the sweep (the mocker in virtual time). Default: real time. */
  readonly clock?: Clock;
  /** Free text for the profile's `description`. */
  readonly description?: string;
  /** Seeds the prompts' random bytes. Default 1. */
  readonly seed?: number;
  readonly signal?: AbortSignal;
  /** Called after each point is measured. */
  readonly onProgress?: (progress: SweepProgress) => void;
}

/** The sweep's options with defaults filled in and checked against the engine. */
export interface CompiledSweepOptions {
  readonly inputLengths: readonly number[];
  readonly concurrency: readonly number[];
  readonly contextLengths: readonly number[];
  readonly requestsPerPoint: number;
  readonly outputTokens: number;
}

const DEFAULT_REQUESTS_PER_POINT = 3;
const DEFAULT_OUTPUT_TOKENS = 64;
/** Largest default lengths and batch: beyond them a default sweep takes long on real engines. */
const DEFAULT_MAX_LENGTH = 8192;
const DEFAULT_MAX_CONCURRENCY = 64;

/**
 * The axes a sweep takes when none are given, within what `info` holds: input lengths 64, 128, …
 * up to 8192 and below the context per sequence; concurrencies 1, 2, 4, … up to 64 and the engine's
 * sequences; context lengths 128, 256, … up to 8192 where the largest batch still fits in KV.
 */
export function defaultSweepAxes(
  info: EngineInfo,
  outputTokens = DEFAULT_OUTPUT_TOKENS,
): Omit<CompiledSweepOptions, "requestsPerPoint" | "outputTokens"> {
  const powers = (from: number, fits: (x: number) => boolean): number[] => {
    const values: number[] = [];
    for (let x = from; x <= DEFAULT_MAX_LENGTH && fits(x); x *= 2) values.push(x);
    return values;
  };
  const kvTokens = info.totalKvBlocks * info.blockSize;
  const concurrency: number[] = [];
  for (let c = 1; c <= Math.min(DEFAULT_MAX_CONCURRENCY, info.maxSequences); c *= 2) concurrency.push(c);
  const widest = concurrency.at(-1) ?? 1;
  return {
    inputLengths: powers(64, (x) => x < info.contextLength && x <= kvTokens),
    concurrency,
    contextLengths: powers(128, (x) => decodeFits(info, widest, x, outputTokens) === undefined),
  };
}

/**
 * Fills in defaults and checks that every point can run on the engine as asked. Refuses, with
 * ArmatureError `CONFIG_INVALID` naming the flag: empty lists, values that are not positive whole
 * numbers or repeat, prompts that do not fit the context per sequence, batches above the engine's
 * sequences, and batches whose KV does not fit (they would be preempted and measure recomputation).
 */
export function compileSweepOptions(info: EngineInfo, options: ProfileSweepOptions = {}): CompiledSweepOptions {
  const fail = (message: string): never => {
    throw new ArmatureError("CONFIG_INVALID", message);
  };
  const outputTokens = options.outputTokens ?? DEFAULT_OUTPUT_TOKENS;
  if (!Number.isInteger(outputTokens) || outputTokens < 2) {
    fail(`--output-tokens must be a whole number of at least 2 (one gap between tokens), got ${outputTokens}`);
  }
  const requestsPerPoint = options.requestsPerPoint ?? DEFAULT_REQUESTS_PER_POINT;
  if (!Number.isInteger(requestsPerPoint) || requestsPerPoint < 1) {
    fail(`--requests-per-point must be a whole number above 0, got ${requestsPerPoint}`);
  }
  const defaults = defaultSweepAxes(info, outputTokens);
  const inputLengths = checkAxis("--input-lengths", options.inputLengths ?? defaults.inputLengths, fail);
  const concurrency = checkAxis("--concurrency", options.concurrency ?? defaults.concurrency, fail);
  const contextLengths = checkAxis("--context-lengths", options.contextLengths ?? defaults.contextLengths, fail);
  const kvTokens = info.totalKvBlocks * info.blockSize;
  for (const length of inputLengths) {
    if (length >= info.contextLength) {
      fail(
        `--input-lengths ${length} does not fit the engine's context of ${info.contextLength} tokens per sequence (--context-size)`,
      );
    }
    if (length > kvTokens) fail(`--input-lengths ${length} is more than the engine's KV cache holds (${kvTokens} tokens)`);
  }
  const widest = concurrency.at(-1)!;
  if (widest > info.maxSequences) {
    const flag = info.kind === "llamacpp" ? "; raise --sequences" : "";
    fail(`--concurrency ${widest} is above the ${info.maxSequences} sequences the engine runs at once${flag}`);
  }
  for (const contextTokens of contextLengths) {
    if (contextTokens <= Math.floor(outputTokens / 2)) {
      fail(`--context-lengths ${contextTokens} must be above half of --output-tokens (${outputTokens}): the prompt is the rest`);
    }
    const problem = decodeFits(info, widest, contextTokens, outputTokens);
    if (problem) fail(problem);
  }
  return { inputLengths, concurrency, contextLengths, requestsPerPoint, outputTokens };
}

/**
 * Measures `engine`: first the prefill points, one request at a time, then the decode grid, each
 * cell a batch started at once, then what a prefill of each input length adds to the steps of a
 * decode batch it joins (`measureInterleaved`, with the largest profiled concurrency up to 8 at the
 * shortest context length), kept on the prefill points as `interleavedMs` when every length could
 * be measured. Returns the profile, already checked by `parseProfile`. Throws
 * `CONFIG_INVALID` from `compileSweepOptions` before any request, and the engine's errors.
 */
export async function runProfileSweep(engine: Engine, options: ProfileSweepOptions = {}): Promise<ProfileDocument> {
  const compiled = compileSweepOptions(engine.info, options);
  const context = {
    engine,
    clock: options.clock ?? new RealClock(),
    requests: new SweepRequests(options.seed ?? 1),
    signal: options.signal ?? new AbortController().signal,
  };
  // One short request first: a real engine's first evaluation pays for allocations no later one does.
  await measurePrefill(context, Math.min(16, compiled.inputLengths[0]!), 1);
  const prefill: PrefillPoint[] = [];
  for (const inputTokens of compiled.inputLengths) {
    const measured = await measurePrefill(context, inputTokens, compiled.requestsPerPoint);
    prefill.push(measured.point);
    options.onProgress?.({ phase: "prefill", ...measured });
  }
  const decode: DecodePoint[] = [];
  for (const contextTokens of compiled.contextLengths) {
    for (const concurrency of compiled.concurrency) {
      const measured = await measureDecode(context, concurrency, contextTokens, compiled.outputTokens);
      decode.push(measured.point);
      options.onProgress?.({ phase: "decode", ...measured });
    }
  }
  const concurrency = compiled.concurrency.filter((c) => c <= INTERLEAVE_CONCURRENCY).at(-1) ?? compiled.concurrency[0]!;
  const interleaved: number[] = [];
  for (const { inputTokens } of prefill) {
    const measured = await measureInterleaved(
      context,
      inputTokens,
      concurrency,
      compiled.contextLengths[0]!,
      compiled.outputTokens,
    );
    options.onProgress?.({ phase: "interleave", inputTokens, ...measured });
    if (!measured.measured) break;
    interleaved.push(measured.interleavedMs);
  }
  const document: ProfileDocument = {
    version: PROFILE_VERSION,
    ...(options.description === undefined ? {} : { description: options.description }),
    prefill:
      interleaved.length === prefill.length ? prefill.map((point, k) => ({ ...point, interleavedMs: interleaved[k]! })) : prefill,
    decode,
  };
  parseProfile(document, "the profile sweep's result");
  return document;
}

/**
 * One progress line: `prefill 512 tokens: TTFT 41.2 ms, 12427 tokens/s (median of 3)`, or
 * `decode concurrency 8, context 1024, 64 output tokens: ITL 6.17 ms, 1296 tokens/s, KV 0.8%`.
 */
export function describeSweepProgress(progress: SweepProgress): string {
  if (progress.phase === "interleave") {
    if (!progress.measured)
      return `interleaved prefill of ${progress.inputTokens} tokens: not measured (${progress.reason}); the planner uses TTFT`;
    return `interleaved prefill of ${progress.inputTokens} tokens: adds ${progress.interleavedMs.toFixed(1)} ms to the steps of ${progress.concurrency} decoding sequences (context ${progress.contextTokens})`;
  }
  if (progress.phase === "prefill") {
    const { inputTokens, ttftMs, tokensPerSecond } = progress.point;
    const runs = progress.ttftSamplesMs.length;
    return `prefill ${inputTokens} tokens: TTFT ${ttftMs.toFixed(1)} ms, ${tokensPerSecond.toFixed(0)} tokens/s (median of ${runs})`;
  }
  const { concurrency, contextTokens, itlMs, tokensPerSecond, kvUsage } = progress.point;
  const output = progress.outputTokens;
  const note = progress.steady ? "" : " (the batch never decoded all together: every gap counted)";
  return `decode concurrency ${concurrency}, context ${contextTokens}, ${output} output tokens: ITL ${itlMs.toFixed(2)} ms, ${tokensPerSecond.toFixed(0)} tokens/s, KV ${(kvUsage * 100).toFixed(1)}%${note}`;
}

function checkAxis(flag: string, values: readonly number[], fail: (message: string) => never): number[] {
  if (values.length === 0) fail(`${flag} needs at least one value (none of the defaults fits this engine)`);
  for (const value of values) {
    if (!Number.isInteger(value) || value < 1) fail(`${flag} takes whole numbers above 0, got ${value}`);
  }
  const sorted = [...values].sort((a, b) => a - b);
  const repeated = sorted.find((value, index) => index > 0 && sorted[index - 1] === value);
  if (repeated !== undefined) fail(`${flag} repeats ${repeated}`);
  return sorted;
}
