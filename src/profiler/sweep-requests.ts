import { type Engine, SeededRandom } from "../engines/index.js";
import { ArmatureError, type GenerateRequest } from "../protocol/index.js";
import { type Clock, VirtualClock } from "../runtime/index.js";

/** When one streamed request started, when each of its token-deltas arrived, and when it ended. */
export interface RequestTrace {
  readonly startMs: number;
  readonly deltas: readonly { readonly atMs: number; readonly tokens: number }[];
  readonly endMs: number;
}

/** Printable ASCII: token ids that are single bytes in the byte tokenizer and the tiny model's byte-level BPE. */
const FIRST_TOKEN = 32;
const TOKEN_RANGE = 95;
/** Leading tokens that number the prompt, so no two prompts of a sweep share even their first block. */
const SERIAL_TOKENS = 4;

/**
 * Requests with prompts no engine has seen before: each prompt starts with its own serial number
 * (in base 95 over printable bytes), then seeded random bytes, so a prefix cache finds nothing to
 * reuse. Requests are greedy and ignore end-of-sequence, so each yields exactly `maxTokens` tokens.
 */
export class SweepRequests {
  readonly #random: SeededRandom;
  #serial = 0;

  constructor(seed = 1) {
    this.#random = new SeededRandom(seed);
  }

  /** A request named `profile-{phase}-{serial}` for `maxTokens` tokens after a fresh prompt of `promptTokens` (≥ 1). */
  next(phase: string, promptTokens: number, maxTokens: number): GenerateRequest {
    const id = this.#serial++;
    let serial = id;
    const tokens: number[] = [];
    for (let k = 0; k < SERIAL_TOKENS; k++) {
      tokens.push(FIRST_TOKEN + (serial % TOKEN_RANGE));
      serial = Math.floor(serial / TOKEN_RANGE);
    }
    while (tokens.length < promptTokens) tokens.push(FIRST_TOKEN + this.#random.int(TOKEN_RANGE));
    return {
      type: "generate-request",
      requestId: `profile-${phase}-${id}`,
      model: "profile",
      tokenIds: tokens.slice(0, Math.max(1, promptTokens)),
      sampling: { temperature: 0 },
      maxTokens,
      ignoreEos: true,
    };
  }
}

/**
 * Streams one request through `engine`, stamping each token-delta with `clock`. `onDelta` runs after
 * each delta is stamped (the sweep samples the engine's KV load there). Throws the engine's error,
 * and ArmatureError `ENGINE_FAILED` when the request ends any other way than by its length.
 */
export async function traceRequest(
  engine: Engine,
  request: GenerateRequest,
  clock: Clock,
  signal: AbortSignal,
  onDelta?: () => void,
): Promise<RequestTrace> {
  const startMs = clock.now();
  const deltas: { atMs: number; tokens: number }[] = [];
  for await (const item of engine.generate(request, { signal })) {
    if (item.type === "token-delta") {
      if (item.tokenIds.length > 0) deltas.push({ atMs: clock.now(), tokens: item.tokenIds.length });
      onDelta?.();
    } else if (item.type === "request-end" && item.finishReason !== "length" && item.finishReason !== "stop") {
      if (signal.aborted) throw new ArmatureError("REQUEST_CANCELLED", "the profile sweep was cancelled");
      throw new ArmatureError(
        "ENGINE_FAILED",
        `request ${request.requestId} (${request.tokenIds.length} prompt tokens) ended with '${item.finishReason}'${item.error ? `: ${item.error.message}` : ""}`,
      );
    }
  }
  if (deltas.length === 0) {
    throw new ArmatureError("ENGINE_FAILED", `request ${request.requestId} produced no tokens`);
  }
  return { startMs, deltas, endMs: clock.now() };
}

/** Event-loop turns without a timer or progress before a virtual-time run counts as stuck. */
const STALLED_TURNS = 1000;

/**
 * Runs `work`, moving a `VirtualClock` forward whenever everything waits on it, until `work` settles;
 * on any other clock it just awaits `work`. Throws ArmatureError `ENGINE_FAILED` if, on a virtual
 * clock, the work waits for something other than time (the engine stalled).
 */
export async function runOnClock<T>(clock: Clock, work: () => Promise<T>): Promise<T> {
  if (!(clock instanceof VirtualClock)) return work();
  const state: { outcome?: { ok: true; value: T } | { ok: false; error: unknown } } = {};
  // Settled into a value here, so a rejection is handled at once, not after the clock loop.
  const settled = work().then(
    (value) => {
      state.outcome = { ok: true, value };
    },
    (error: unknown) => {
      state.outcome = { ok: false, error };
    },
  );
  let idleTurns = 0;
  while (state.outcome === undefined) {
    const before = clock.now();
    await clock.runUntilIdle();
    if (state.outcome !== undefined) break;
    idleTurns = clock.now() === before && clock.pendingTimers === 0 ? idleTurns + 1 : 0;
    if (idleTurns > STALLED_TURNS) {
      throw new ArmatureError("ENGINE_FAILED", "the engine stopped making progress in virtual time (no step is scheduled)");
    }
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await settled;
  const outcome = state.outcome;
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}
