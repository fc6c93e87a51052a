import { ArmatureError } from "../protocol/index.js";

/**
 * One measured prefill operating point of a worker: prompts of `inputTokens` uncached tokens.
 * JSON: `{ "inputTokens": 2048, "ttftMs": 180, "tokensPerSecond": 11378 }`.
 */
export interface PrefillPoint {
  /** Uncached prompt tokens per request; a positive integer. */
  readonly inputTokens: number;
  /** Time to first token of such a request on an otherwise idle worker, in milliseconds. */
  readonly ttftMs: number;
  /** Prompt tokens per second one worker prefills at this input length. */
  readonly tokensPerSecond: number;
  /**
   * What such a prefill adds to the steps of a decode batch it joins, in milliseconds summed over
   * those steps (aggregated serving): measured by `armature profile`; absent from older profiles,
   * where the planner takes `ttftMs` instead. Either every prefill point has it or none.
   */
  readonly interleavedMs?: number | undefined;
}

/**
 * One measured decode operating point: `concurrency` sequences decoding together, each with a context
 * of `contextTokens` tokens (prompt plus output so far).
 * JSON: `{ "concurrency": 32, "contextTokens": 4096, "itlMs": 28, "tokensPerSecond": 1143, "kvUsage": 0.62 }`.
 */
export interface DecodePoint {
  /** Sequences in the batch; a positive integer. */
  readonly concurrency: number;
  /** Tokens of context per sequence; a positive integer. */
  readonly contextTokens: number;
  /** Inter-token latency each sequence sees, in milliseconds. */
  readonly itlMs: number;
  /** Output tokens per second of the whole worker (all sequences together). */
  readonly tokensPerSecond: number;
  /** Fraction of the worker's KV cache in use, from 0 to 1. */
  readonly kvUsage: number;
}

/** The decode points as a full grid: `cells[i][j]` is the point at `concurrency[i]`, `contextTokens[j]`. */
export interface DecodeGrid {
  /** Distinct concurrencies, ascending. */
  readonly concurrency: readonly number[];
  /** Distinct context lengths, ascending. */
  readonly contextTokens: readonly number[];
  readonly cells: readonly (readonly DecodePoint[])[];
}

/** A worker's measured performance, as `parseProfile` returns it. */
export interface WorkerProfile {
  /** Where the profile came from (a file path), for messages. */
  readonly source: string;
  readonly description: string | undefined;
  /** Prefill points, ascending by input length; at least one. */
  readonly prefill: readonly PrefillPoint[];
  readonly decode: DecodeGrid;
}

/** The one profile format version this code reads. */
export const PROFILE_VERSION = 1;

const PROFILE_FIELDS = ["version", "description", "prefill", "decode"];
const PREFILL_FIELDS = ["inputTokens", "ttftMs", "tokensPerSecond", "interleavedMs"] as const;
const DECODE_FIELDS = ["concurrency", "contextTokens", "itlMs", "tokensPerSecond", "kvUsage"] as const;

type Json = Record<string, unknown>;

/**
 * Reads and checks a worker profile (format in docs/planner.md). `json` is the file's text, or the
 * value already parsed from it; `source` names the file in messages.
 *
 * Refuses, with ArmatureError `CONFIG_INVALID` naming the file and the field (`decode[3].itlMs`):
 * text that is not JSON, a version other than 1, unknown fields, missing or non-positive numbers,
 * non-integer token counts and concurrencies, `kvUsage` outside 0…1, repeated points, and decode points
 * that do not form a full grid (every concurrency measured at every context length).
 */
export function parseProfile(json: unknown, source: string): WorkerProfile {
  const fail = (message: string): never => {
    throw new ArmatureError("CONFIG_INVALID", `profile ${source}: ${message}`);
  };
  let document = json;
  if (typeof json === "string") {
    try {
      document = JSON.parse(json);
    } catch (error) {
      fail(`not JSON (${(error as Error).message})`);
    }
  }
  const root = requireObject(document, "the document", fail);
  refuseUnknownFields(root, PROFILE_FIELDS, "", fail);
  if (root.version !== PROFILE_VERSION) fail(`version must be ${PROFILE_VERSION}, got ${JSON.stringify(root.version)}`);
  if (root.description !== undefined && typeof root.description !== "string") fail("description must be a string");
  return {
    source,
    description: root.description as string | undefined,
    prefill: parsePrefill(root.prefill, fail),
    decode: parseDecode(root.decode, fail),
  };
}

function parsePrefill(value: unknown, fail: (message: string) => never): PrefillPoint[] {
  const points = requirePoints(value, "prefill", fail).map((item, index) => {
    const at = `prefill[${index}]`;
    const object = requireObject(item, at, fail);
    refuseUnknownFields(object, PREFILL_FIELDS, at, fail);
    const interleavedMs = object.interleavedMs === undefined ? undefined : requireNumber(object, "interleavedMs", at, fail);
    if (interleavedMs !== undefined && interleavedMs < 0) fail(`${at}.interleavedMs must be 0 or more, got ${interleavedMs}`);
    return {
      index,
      point: {
        inputTokens: requireCount(object, "inputTokens", at, fail),
        ttftMs: requirePositive(object, "ttftMs", at, fail),
        tokensPerSecond: requirePositive(object, "tokensPerSecond", at, fail),
        ...(interleavedMs === undefined ? {} : { interleavedMs }),
      },
    };
  });
  const measured = points.filter((entry) => entry.point.interleavedMs !== undefined);
  if (measured.length > 0 && measured.length < points.length) {
    const missing = points.find((entry) => entry.point.interleavedMs === undefined)!;
    fail(
      `prefill[${missing.index}] has no interleavedMs, which prefill[${measured[0]!.index}] has: every prefill point has it or none`,
    );
  }
  points.sort((a, b) => a.point.inputTokens - b.point.inputTokens);
  for (let k = 1; k < points.length; k++) {
    const previous = points[k - 1]!;
    const current = points[k]!;
    if (previous.point.inputTokens === current.point.inputTokens) {
      const [first, second] = [previous.index, current.index].sort((a, b) => a - b);
      fail(`prefill[${second}] repeats inputTokens ${current.point.inputTokens} of prefill[${first}]`);
    }
  }
  return points.map((entry) => entry.point);
}

function parseDecode(value: unknown, fail: (message: string) => never): DecodeGrid {
  const points = requirePoints(value, "decode", fail).map((item, index) => {
    const at = `decode[${index}]`;
    const object = requireObject(item, at, fail);
    refuseUnknownFields(object, DECODE_FIELDS, at, fail);
    const kvUsage = requireNumber(object, "kvUsage", at, fail);
    if (kvUsage < 0 || kvUsage > 1) fail(`${at}.kvUsage must be a fraction from 0 to 1, got ${kvUsage}`);
    return {
      concurrency: requireCount(object, "concurrency", at, fail),
      contextTokens: requireCount(object, "contextTokens", at, fail),
      itlMs: requirePositive(object, "itlMs", at, fail),
      tokensPerSecond: requirePositive(object, "tokensPerSecond", at, fail),
      kvUsage,
    };
  });
  const concurrency = [...new Set(points.map((p) => p.concurrency))].sort((a, b) => a - b);
  const contextTokens = [...new Set(points.map((p) => p.contextTokens))].sort((a, b) => a - b);
  const cells: (DecodePoint | undefined)[][] = concurrency.map(() => contextTokens.map(() => undefined));
  const seenAt: number[][] = concurrency.map(() => contextTokens.map(() => -1));
  points.forEach((point, index) => {
    const i = concurrency.indexOf(point.concurrency);
    const j = contextTokens.indexOf(point.contextTokens);
    const seen = seenAt[i]![j]!;
    if (seen >= 0) {
      fail(
        `decode[${index}] repeats the point at concurrency ${point.concurrency}, contextTokens ${point.contextTokens} (decode[${seen}])`,
      );
    }
    seenAt[i]![j] = index;
    cells[i]![j] = point;
  });
  concurrency.forEach((c, i) => {
    contextTokens.forEach((l, j) => {
      if (cells[i]![j] === undefined) {
        fail(
          `decode has no point at concurrency ${c}, contextTokens ${l}: the points must form a full grid (every concurrency measured at every context length)`,
        );
      }
    });
  });
  return { concurrency, contextTokens, cells: cells as DecodePoint[][] };
}

function requireObject(value: unknown, at: string, fail: (message: string) => never): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(`${at} must be an object`);
  return value as Json;
}

function requirePoints(value: unknown, at: string, fail: (message: string) => never): unknown[] {
  if (!Array.isArray(value) || value.length === 0) fail(`${at} must be a non-empty array of points`);
  return value as unknown[];
}

function refuseUnknownFields(object: Json, known: readonly string[], at: string, fail: (message: string) => never): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) {
      fail(`unknown field ${at ? `${at}.` : ""}${key} (expected ${known.join(", ")})`);
    }
  }
}

function requireNumber(object: Json, field: string, at: string, fail: (message: string) => never): number {
  const value = object[field];
  if (typeof value !== "number" || !Number.isFinite(value)) {
    fail(`${at}.${field} must be a number, got ${value === undefined ? "nothing" : JSON.stringify(value)}`);
  }
  return value as number;
}

function requirePositive(object: Json, field: string, at: string, fail: (message: string) => never): number {
  const value = requireNumber(object, field, at, fail);
  if (value <= 0) fail(`${at}.${field} must be above 0, got ${value}`);
  return value;
}

function requireCount(object: Json, field: string, at: string, fail: (message: string) => never): number {
  const value = requirePositive(object, field, at, fail);
  if (!Number.isInteger(value)) fail(`${at}.${field} must be a whole number, got ${value}`);
  return value;
}
