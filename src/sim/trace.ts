import { readFile } from "node:fs/promises";
import { ArmatureError, PRIORITY_LIMIT } from "../protocol/index.js";

/** One request of a Mooncake-format trace. */
export interface TraceRequest {
  /** Arrival, milliseconds since the trace start. */
  readonly timestamp: number;
  readonly inputLength: number;
  readonly outputLength: number;
  /** Ids of the prompt's blocks of `traceBlockSize` tokens; equal ids mean equal tokens. */
  readonly hashIds: readonly number[];
  /** armature's extension: where the request waits among others (lower runs earlier). Absent: 0. */
  readonly priority?: number | undefined;
  /** armature's extension: ms from arrival by which the request must have finished. Absent: none. */
  readonly deadlineMs?: number | undefined;
}

/**
 * Reads a Mooncake JSONL trace (`timestamp`, `input_length`, `output_length`, `hash_ids`), with
 * armature's optional `priority` (an integer, lower runs earlier) and `deadline_ms` (ms from arrival).
 */
export async function loadTrace(path: string): Promise<TraceRequest[]> {
  const text = await readFile(path, "utf8");
  const out: TraceRequest[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let row: Record<string, unknown>;
    try {
      row = JSON.parse(line) as Record<string, unknown>;
    } catch (cause) {
      throw new ArmatureError("REQUEST_INVALID", `${path}:${index + 1}: not JSON`, { cause });
    }
    const { timestamp, input_length, output_length, hash_ids } = row;
    if (
      typeof timestamp !== "number" ||
      !Number.isInteger(input_length) ||
      (input_length as number) < 1 ||
      !Number.isInteger(output_length) ||
      !Array.isArray(hash_ids)
    ) {
      throw new ArmatureError(
        "REQUEST_INVALID",
        `${path}:${index + 1}: a Mooncake trace row needs timestamp (ms), input_length, output_length and hash_ids`,
      );
    }
    const { priority, deadline_ms } = row;
    if (priority !== undefined && (!Number.isInteger(priority) || Math.abs(priority as number) > PRIORITY_LIMIT)) {
      throw new ArmatureError("REQUEST_INVALID", `${path}:${index + 1}: priority must be an integer within ±${PRIORITY_LIMIT}`);
    }
    if (deadline_ms !== undefined && !(typeof deadline_ms === "number" && deadline_ms > 0 && Number.isFinite(deadline_ms))) {
      throw new ArmatureError("REQUEST_INVALID", `${path}:${index + 1}: deadline_ms must be a number of ms above 0`);
    }
    out.push({
      timestamp,
      inputLength: input_length as number,
      outputLength: Math.max(1, output_length as number),
      hashIds: hash_ids as number[],
      ...(priority === undefined ? {} : { priority: priority as number }),
      ...(deadline_ms === undefined ? {} : { deadlineMs: deadline_ms }),
    });
  });
  return out.sort((a, b) => a.timestamp - b.timestamp);
}

/**
 * Token ids for a trace request: block j of `traceBlockSize` tokens is a pure function of
 * `hashIds[j]`, so equal ids give equal token blocks across requests; tokens past the listed blocks
 * are unique to the request.
 */
export function synthesizeTokens(
  request: TraceRequest,
  traceBlockSize: number,
  vocabSize: number,
  requestIndex: number,
): number[] {
  const tokens = new Array<number>(request.inputLength);
  for (let i = 0; i < request.inputLength; i++) {
    const block = Math.floor(i / traceBlockSize);
    const id = request.hashIds[block];
    const seed = id === undefined ? 0x9e3779b9 ^ (requestIndex * 31 + block) : id;
    tokens[i] = mix(seed, i % traceBlockSize) % vocabSize;
  }
  return tokens;
}

function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x85ebca6b, 0xcc9e2d51) ^ Math.imul(b + 0x27d4eb2f, 0x165667b1);
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d);
  h = Math.imul(h ^ (h >>> 12), 0x297a2d39);
  return (h ^ (h >>> 15)) >>> 0;
}
