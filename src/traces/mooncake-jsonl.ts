import type { TraceRequest } from "../sim/index.js";

/** The block size of Mooncake's traces: each hash id stands for 512 prompt tokens (the last one for fewer). */
export const MOONCAKE_BLOCK_SIZE = 512;

/**
 * One request as a Mooncake trace line, without the newline: compact JSON with the keys in Mooncake's
 * order, `{"timestamp":…,"input_length":…,"output_length":…,"hash_ids":[…]}`, then armature's
 * `priority` and `deadline_ms` where the request has them, as `loadTrace` reads it.
 */
export function formatMooncakeLine(request: TraceRequest): string {
  return JSON.stringify({
    timestamp: request.timestamp,
    input_length: request.inputLength,
    output_length: request.outputLength,
    hash_ids: request.hashIds,
    ...(request.priority === undefined ? {} : { priority: request.priority }),
    ...(request.deadlineMs === undefined ? {} : { deadline_ms: request.deadlineMs }),
  });
}

/** A whole trace as Mooncake JSONL: one line per request, each ending in a newline. */
export function formatMooncakeTrace(requests: readonly TraceRequest[]): string {
  let text = "";
  for (const request of requests) text += `${formatMooncakeLine(request)}\n`;
  return text;
}

/** How many hash ids a prompt of `inputLength` tokens has: one per block, the last one possibly partial. */
export function blockCount(inputLength: number, blockSize: number): number {
  return Math.ceil(inputLength / blockSize);
}
