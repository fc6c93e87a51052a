import { writeFile } from "node:fs/promises";
import { SeededRandom } from "../engines/index.js";
import { ArmatureError, PRIORITY_LIMIT } from "../protocol/index.js";
import type { TraceRequest } from "../sim/index.js";
import { type LoadShape, poissonArrivals, validateLoadShape } from "./load-shape.js";
import { blockCount, formatMooncakeTrace, MOONCAKE_BLOCK_SIZE } from "./mooncake-jsonl.js";

/** What a synthetic trace looks like. The CLI flag that sets each field is named in brackets. */
export interface SyntheticTraceOptions {
  /** [--shape and its flags] How the request rate changes over time. Required. */
  readonly shape: LoadShape;
  /** [--duration] Length of the trace in seconds; arrivals fall in [0, duration). Required. */
  readonly durationSeconds: number;
  /** [--seed] Seed of the generator, an integer in [0, 2³²). The same seed gives the same trace. Default 1. */
  readonly seed?: number;
  /**
   * [--input-mean] Mean number of new prompt tokens per request: the whole prompt after the system prompt
   * for a request that opens a conversation, the new message for one that continues it. Default 3000.
   */
  readonly inputMeanTokens?: number;
  /** [--output-mean] Mean number of output tokens per request. Default 150. */
  readonly outputMeanTokens?: number;
  /**
   * [--length-sigma] σ of the lognormal length distributions (the standard deviation of the log); 0
   * makes every length equal to its mean. Default 0.5 (coefficient of variation √(e^σ² − 1) ≈ 0.53).
   */
  readonly lengthSigma?: number;
  /** [--multi-turn-share] Probability, in [0, 1), that a request continues an open conversation. Default 0. */
  readonly multiTurnShare?: number;
  /** [--system-blocks] Full blocks of a system prompt shared by every request (hash ids 0 … n−1). Default 0. */
  readonly systemBlocks?: number;
  /** [--block-size] Tokens per hash id. Default 512, Mooncake's. */
  readonly blockSize?: number;
  /**
   * [--priority-mix] Priority classes and the share of requests in each (shares sum to 1), drawn per
   * request; each request then carries its `priority`. Default none: no request carries one.
   */
  readonly priorityMix?: readonly PriorityShare[] | undefined;
}

/** One priority class of a synthetic trace: its `priority` (lower runs earlier) and share of requests. */
export interface PriorityShare {
  readonly priority: number;
  readonly share: number;
}

/** `SyntheticTraceOptions` checked, every default filled in. */
export interface CompiledSyntheticTraceOptions {
  readonly shape: LoadShape;
  readonly durationSeconds: number;
  readonly seed: number;
  readonly inputMeanTokens: number;
  readonly outputMeanTokens: number;
  readonly lengthSigma: number;
  readonly multiTurnShare: number;
  readonly systemBlocks: number;
  readonly blockSize: number;
  readonly priorityMix: readonly PriorityShare[];
}

/** A generated request, with the request whose conversation it continues. */
export interface SyntheticRequest extends TraceRequest {
  /** Index in the trace of the previous turn of this request's conversation; `undefined` when it opens one. */
  readonly parentIndex: number | undefined;
}

/**
 * Fills in defaults and checks every value.
 * @throws ArmatureError CONFIG_INVALID naming the flag that sets a bad value.
 */
export function compileSyntheticTraceOptions(options: SyntheticTraceOptions): CompiledSyntheticTraceOptions {
  validateLoadShape(options.shape);
  const compiled: CompiledSyntheticTraceOptions = {
    shape: options.shape,
    durationSeconds: options.durationSeconds,
    seed: options.seed ?? 1,
    inputMeanTokens: options.inputMeanTokens ?? 3000,
    outputMeanTokens: options.outputMeanTokens ?? 150,
    lengthSigma: options.lengthSigma ?? 0.5,
    multiTurnShare: options.multiTurnShare ?? 0,
    systemBlocks: options.systemBlocks ?? 0,
    blockSize: options.blockSize ?? MOONCAKE_BLOCK_SIZE,
    priorityMix: options.priorityMix ?? [],
  };
  check("--duration", compiled.durationSeconds, (v) => Number.isFinite(v) && v > 0, "a number of seconds above 0");
  check("--seed", compiled.seed, (v) => Number.isInteger(v) && v >= 0 && v < 2 ** 32, "an integer from 0 to 4294967295");
  check("--input-mean", compiled.inputMeanTokens, (v) => Number.isFinite(v) && v >= 1, "a number of tokens ≥ 1");
  check("--output-mean", compiled.outputMeanTokens, (v) => Number.isFinite(v) && v >= 1, "a number of tokens ≥ 1");
  check("--length-sigma", compiled.lengthSigma, (v) => Number.isFinite(v) && v >= 0 && v <= 3, "a number from 0 to 3");
  check("--multi-turn-share", compiled.multiTurnShare, (v) => v >= 0 && v < 1, "a number in [0, 1)");
  check("--system-blocks", compiled.systemBlocks, (v) => Number.isInteger(v) && v >= 0, "a whole number ≥ 0");
  check("--block-size", compiled.blockSize, (v) => Number.isInteger(v) && v >= 1, "a whole number ≥ 1");
  checkPriorityMix(compiled.priorityMix);
  return compiled;
}

/**
 * Generates a trace. Arrivals: a non-homogeneous Poisson process with the shape's rate
 * (`poissonArrivals`), timestamps in whole ms rounded down. Lengths: lognormal with the given mean,
 * `round(exp(μ + σZ))` with μ = ln(mean) − σ²/2 and Z standard normal, at least 1 token.
 *
 * Conversations: with probability `multiTurnShare` (once one exists) a request continues an open
 * conversation picked uniformly at random, and becomes that conversation's latest turn. Its prompt is
 * the previous turn's prompt, that turn's output and a new message (`inputMeanTokens` on average).
 * Its hash ids start with the previous turn's ids of full blocks; the previous turn's partly filled last
 * block and everything after it get new ids, as in Mooncake's traces, where an id stands for a whole
 * block hashed with all blocks before it. A previous turn whose prompt is a whole number of blocks is
 * therefore shared entirely. Every request opens with `systemBlocks` shared ids (0 … n−1), counted in
 * its input length. New ids count up from `systemBlocks` in order of arrival.
 *
 * Priorities: each request's class is drawn with the classes' shares (`priorityMix`).
 *
 * Arrivals, content and priorities come from three generators seeded from `seed`, so the same seed
 * gives the same arrivals whatever the content options, and the same content whatever the mix.
 * @throws ArmatureError CONFIG_INVALID as `compileSyntheticTraceOptions` does.
 */
export function generateSyntheticTrace(options: SyntheticTraceOptions): SyntheticRequest[] {
  const o = compileSyntheticTraceOptions(options);
  const arrivals = poissonArrivals(o.shape, o.durationSeconds, new SeededRandom(o.seed));
  const random = new SeededRandom(Math.imul(o.seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0);
  const classes = new SeededRandom(Math.imul(o.seed ^ 0x7f4a7c15, 0xc2b2ae35) >>> 0);
  const systemIds = Array.from({ length: o.systemBlocks }, (_, i) => i);
  let nextId = o.systemBlocks;
  const newIds = (count: number): number[] => Array.from({ length: count }, () => nextId++);
  const requests: SyntheticRequest[] = [];
  const openConversations: number[] = [];
  for (const arrival of arrivals) {
    const index = requests.length;
    const continues = random.next() < o.multiTurnShare && openConversations.length > 0;
    const slot = continues ? random.int(openConversations.length) : -1;
    const messageTokens = lognormalLength(random, o.inputMeanTokens, o.lengthSigma);
    const outputLength = lognormalLength(random, o.outputMeanTokens, o.lengthSigma);
    const parentIndex = continues ? openConversations[slot] : undefined;
    const parent = parentIndex === undefined ? undefined : requests[parentIndex];
    let inputLength: number;
    let hashIds: number[];
    if (parent === undefined) {
      inputLength = o.systemBlocks * o.blockSize + messageTokens;
      hashIds = [...systemIds, ...newIds(blockCount(messageTokens, o.blockSize))];
      openConversations.push(index);
    } else {
      inputLength = parent.inputLength + parent.outputLength + messageTokens;
      const shared = parent.hashIds.slice(0, Math.floor(parent.inputLength / o.blockSize));
      hashIds = [...shared, ...newIds(blockCount(inputLength, o.blockSize) - shared.length)];
      openConversations[slot] = index;
    }
    const priority = o.priorityMix.length > 0 ? drawPriority(o.priorityMix, classes.next()) : undefined;
    requests.push({
      timestamp: Math.floor(arrival * 1000),
      inputLength,
      outputLength,
      hashIds,
      parentIndex,
      ...(priority === undefined ? {} : { priority }),
    });
  }
  return requests;
}

/** Generates a trace (`generateSyntheticTrace`) and writes it to `path` as Mooncake JSONL. */
export async function writeSyntheticTrace(path: string, options: SyntheticTraceOptions): Promise<SyntheticRequest[]> {
  const requests = generateSyntheticTrace(options);
  await writeFile(path, formatMooncakeTrace(requests));
  return requests;
}

/** A lognormal draw with the given mean, rounded to whole tokens, at least 1; exactly the mean when σ = 0. */
function lognormalLength(random: SeededRandom, mean: number, sigma: number): number {
  const z = random.gaussian();
  if (sigma === 0) return Math.max(1, Math.round(mean));
  return Math.max(1, Math.round(Math.exp(Math.log(mean) - (sigma * sigma) / 2 + sigma * z)));
}

function check(flag: string, value: number, ok: (v: number) => boolean, what: string): void {
  if (!ok(value)) throw new ArmatureError("CONFIG_INVALID", `${flag} must be ${what}, got ${value}`, { param: flag });
}

/** The class `u` (uniform in [0, 1)) falls in, the classes laid end to end by share. */
function drawPriority(mix: readonly PriorityShare[], u: number): number {
  let edge = 0;
  for (const entry of mix) {
    edge += entry.share;
    if (u < edge) return entry.priority;
  }
  return (mix.at(-1) as PriorityShare).priority;
}

function checkPriorityMix(mix: readonly PriorityShare[]): void {
  if (mix.length === 0) return;
  const seen = new Set<number>();
  for (const { priority, share } of mix) {
    if (!Number.isInteger(priority) || Math.abs(priority) > PRIORITY_LIMIT)
      throw mixError(`priority ${priority} must be an integer within ±${PRIORITY_LIMIT}`);
    if (!(share > 0 && share <= 1)) throw mixError(`the share of priority ${priority} must be in (0, 1], got ${share}`);
    if (seen.has(priority)) throw mixError(`priority ${priority} is given twice`);
    seen.add(priority);
  }
  const total = mix.reduce((sum, entry) => sum + entry.share, 0);
  if (Math.abs(total - 1) > 1e-9) throw mixError(`the shares must sum to 1, they sum to ${total}`);
}

function mixError(problem: string): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `--priority-mix: ${problem}`, { param: "--priority-mix" });
}
