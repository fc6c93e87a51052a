import { type KvEvent, localBlockHash, loraSeed, type StoredBlock } from "../../protocol/index.js";
import { EventBatchError } from "../zmq-kv-events/event-batch-decoder.js";

/** What one answer of TensorRT-LLM's `POST /kv_cache_events` holds, in armature's events. */
export interface TrtllmEventList {
  readonly events: KvEvent[];
  /** Events left out, and why (an unknown type): counted by readers. */
  readonly skipped: string[];
  /** The event ids, in order (a gap means events the server's buffer dropped). */
  readonly ids: number[];
}

/** Integers too long for a double (TensorRT-LLM's 64-bit block hashes), quoted before parsing so no digit is lost. */
const LONG_INTEGERS = /([:[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g;

/**
 * Reads an answer of TensorRT-LLM's pull route (`tensorrt_llm/_utils.py`'s
 * `KVCacheEventSerializer`): a JSON list of `{event_id, data, window_size[, attention_dp_rank]}`,
 * `data.type` one of `created` (the cache was made: the engine started, so everything known of it
 * goes), `stored` (`parent_hash`, `blocks` each with `block_hash`, its `tokens` as
 * `{token_id, token_extra_id}` and its `cache_level`, 0 the GPU and 1 host memory), `removed`
 * (`block_hashes`) and `updated` (a block's level or priority, which changes nothing a router reads).
 * Each stored block is keyed for the router by Dynamo's XXH3 of its token ids, as the ZMQ decoder
 * does; TensorRT-LLM does not write a block's LoRA adapter here, so blocks are the base model's. A
 * block of another size than the router's is a `block-size` error.
 */
export function decodeTrtllmEvents(text: string, blockSize: number): TrtllmEventList {
  let value: unknown;
  try {
    value = JSON.parse(text.replace(LONG_INTEGERS, '$1"$2"'));
  } catch (cause) {
    throw new EventBatchError(`not JSON: ${(cause as Error).message}`, "malformed");
  }
  if (!Array.isArray(value)) throw new EventBatchError("the answer is not a list of events", "malformed");
  const events: KvEvent[] = [];
  const skipped: string[] = [];
  const ids: number[] = [];
  for (const raw of value) {
    if (raw === null || typeof raw !== "object") throw new EventBatchError("an event is not an object", "malformed");
    const { event_id: id, data } = raw as { event_id?: unknown; data?: unknown };
    const eventId = Number(id);
    if (!Number.isInteger(eventId)) throw new EventBatchError("an event without an event_id", "malformed");
    ids.push(eventId);
    const event = readEvent(data, blockSize, skipped);
    if (event) events.push(event);
  }
  return { events, skipped, ids };
}

function readEvent(data: unknown, blockSize: number, skipped: string[]): KvEvent | undefined {
  if (data === null || typeof data !== "object") throw new EventBatchError("an event without data", "malformed");
  const fields = data as Record<string, unknown>;
  switch (fields.type) {
    case "created":
      return { type: "kv-cache-cleared" };
    case "removed":
      return { type: "kv-block-removed", blockHashes: hashList(fields.block_hashes) };
    case "stored":
      return stored(fields, blockSize);
    case "updated":
      // A block's level or priority changed: it is still held, which is all a router reads.
      return undefined;
    default:
      skipped.push(`${String(fields.type)}: not a KV event armature reads`);
      return undefined;
  }
}

function stored(fields: Record<string, unknown>, blockSize: number): KvEvent {
  if (!Array.isArray(fields.blocks)) throw new EventBatchError("stored without blocks", "malformed");
  const blocks: StoredBlock[] = [];
  let level: unknown;
  for (const raw of fields.blocks) {
    const block = raw as { block_hash?: unknown; tokens?: unknown; cache_level?: unknown } | null;
    if (block === null || typeof block !== "object" || !Array.isArray(block.tokens)) {
      throw new EventBatchError("a stored block without tokens", "malformed");
    }
    if (block.tokens.length !== blockSize) {
      throw new EventBatchError(
        `the engine stores blocks of ${block.tokens.length} tokens and the router hashes blocks of ${blockSize}: start the worker with --block-size ${block.tokens.length}`,
        "block-size",
      );
    }
    const ids = new Uint32Array(blockSize);
    block.tokens.forEach((token: unknown, i: number) => {
      const id = (token as { token_id?: unknown } | null)?.token_id;
      if (typeof id !== "number" || !Number.isInteger(id) || id < 0)
        throw new EventBatchError("a token that is not a token id", "malformed");
      ids[i] = id;
    });
    blocks.push({ blockHash: u64(block.block_hash), tokensHash: localBlockHash(ids, loraSeed(undefined)) });
    level ??= block.cache_level;
  }
  const parent = fields.parent_hash;
  return {
    type: "kv-block-stored",
    parentHash: parent === null || parent === undefined ? null : u64(parent),
    blocks,
    blockSize,
    ...(Number(level) === 1 ? { storageTier: "host_pinned" as const } : {}),
  };
}

function hashList(value: unknown): bigint[] {
  if (!Array.isArray(value)) throw new EventBatchError("removed without block_hashes", "malformed");
  return value.map(u64);
}

const U64 = (1n << 64n) - 1n;

/** A block hash (an int, quoted when long) as u64. */
function u64(value: unknown): bigint {
  if ((typeof value === "number" && Number.isInteger(value)) || (typeof value === "string" && /^-?\d+$/.test(value))) {
    return BigInt(value) & U64;
  }
  throw new EventBatchError(`a block hash that is not an integer: ${String(value)}`, "malformed");
}
