import { decode } from "@msgpack/msgpack";
import { type KvEvent, localBlockHash, loraSeed, type StorageTier, type StoredBlock } from "../../protocol/index.js";

/**
 * One KV event batch of an engine's ZMQ publisher (vLLM, SGLang, TRT-LLM's vLLM-compatible stream),
 * in armature's events: block hashes kept as opaque keys for parents and removals, each stored
 * block keyed for the router by Dynamo's XXH3 of its own token ids (LoRA-seeded), so the router never
 * needs the engine's hash algorithm.
 */
export interface DecodedBatch {
  readonly timestamp: number;
  readonly dataParallelRank: number;
  readonly events: KvEvent[];
  /** Events left out, and why (another attention group's, a token form not read): counted by readers. */
  readonly skipped: string[];
}

/** A batch that cannot be read, or one whose blocks are not the router's size. */
export class EventBatchError extends Error {
  /** `block-size`: a configuration error to shout about, not a malformed message. */
  readonly kind: "malformed" | "block-size";

  constructor(message: string, kind: "malformed" | "block-size") {
    super(message);
    this.name = "EventBatchError";
    this.kind = kind;
  }
}

/** KV cache groups whose blocks are whole-prefix attention state (what prefix routing is about). */
const ROUTED_KINDS = new Set(["full_attention", "mla_attention", "sink_full_attention"]);

const MEDIA: Readonly<Record<string, StorageTier>> = {
  GPU: "device",
  gpu: "device",
  CPU: "host_pinned",
  cpu: "host_pinned",
  CPU_TIER: "host_pinned",
  DISK: "disk",
  disk: "disk",
};

/** Field order of the array (msgspec `array_like`) form, after the tag. */
const STORED_FIELDS = [
  "block_hashes",
  "parent_block_hash",
  "token_ids",
  "block_size",
  "lora_id",
  "medium",
  "lora_name",
  "extra_keys",
  "group_idx",
  "kv_cache_spec_kind",
  "kv_cache_spec_sliding_window",
] as const;
const REMOVED_FIELDS = ["block_hashes", "medium", "group_idx"] as const;

/**
 * Decodes a msgpack batch, `[ts, events, data_parallel_rank]` (an array, the rank possibly left
 * out) or the same as a map, whose events are arrays led by their tag (vLLM up to mid-2026) or maps
 * with a `type` key (vLLM 0.26 on). Hashes are ints (signed or unsigned: read as u64) or bytes (the
 * last 8, big-endian). Unknown fields and trailing positions are ignored; anything else malformed
 * throws an `EventBatchError`.
 */
export function decodeEventBatch(payload: Uint8Array, blockSize: number): DecodedBatch {
  let value: unknown;
  try {
    value = decode(payload, { useBigInt64: true });
  } catch (cause) {
    throw new EventBatchError(`not msgpack: ${(cause as Error).message}`, "malformed");
  }
  let ts: unknown;
  let rawEvents: unknown;
  let rank: unknown;
  if (Array.isArray(value)) [ts, rawEvents, rank] = value;
  else if (isMap(value)) ({ ts, events: rawEvents, data_parallel_rank: rank } = value);
  else throw new EventBatchError("the batch is neither an array nor a map", "malformed");
  if (!Array.isArray(rawEvents)) throw new EventBatchError("the batch has no events list", "malformed");
  const events: KvEvent[] = [];
  const skipped: string[] = [];
  for (const raw of rawEvents) {
    const event = readEvent(raw, blockSize, skipped);
    if (event) events.push(event);
  }
  return {
    timestamp: typeof ts === "number" ? ts : Number(ts ?? 0),
    dataParallelRank: rank === undefined || rank === null ? 0 : Number(rank),
    events,
    skipped,
  };
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** The fields of an event in either form, by name. */
function fieldsOf(raw: unknown): { tag: string; fields: Record<string, unknown> } {
  if (Array.isArray(raw) && typeof raw[0] === "string") {
    const tag = raw[0];
    const names: readonly string[] = tag === "BlockStored" ? STORED_FIELDS : tag === "BlockRemoved" ? REMOVED_FIELDS : [];
    const fields: Record<string, unknown> = {};
    names.forEach((name, i) => {
      fields[name] = raw[i + 1];
    });
    return { tag, fields };
  }
  if (isMap(raw) && typeof raw.type === "string") return { tag: raw.type, fields: raw };
  throw new EventBatchError("an event is neither a tagged array nor a map with a type", "malformed");
}

function readEvent(raw: unknown, blockSize: number, skipped: string[]): KvEvent | undefined {
  const { tag, fields } = fieldsOf(raw);
  if (tag === "AllBlocksCleared") return { type: "kv-cache-cleared" };
  if (tag !== "BlockStored" && tag !== "BlockRemoved") {
    skipped.push(`${tag}: not a KV event armature reads`);
    return undefined;
  }
  const kind = fields.kv_cache_spec_kind;
  if (typeof kind === "string" && !ROUTED_KINDS.has(kind)) {
    skipped.push(`${tag} of a ${kind} group`);
    return undefined;
  }
  const tier = storageTier(fields.medium);
  const hashes = hashList(fields.block_hashes, tag);
  if (tag === "BlockRemoved") return { type: "kv-block-removed", blockHashes: hashes, ...(tier ? { storageTier: tier } : {}) };
  const size = Number(fields.block_size);
  if (!Number.isInteger(size) || size < 1) throw new EventBatchError("BlockStored without a block_size", "malformed");
  if (size !== blockSize) {
    throw new EventBatchError(
      `the engine stores blocks of ${size} tokens and the router hashes blocks of ${blockSize}: start the worker with --block-size ${size}`,
      "block-size",
    );
  }
  const tokens = fields.token_ids;
  if (!Array.isArray(tokens)) throw new EventBatchError("BlockStored without token_ids", "malformed");
  if (tokens.length > 0 && Array.isArray(tokens[0])) {
    skipped.push("BlockStored with token pairs (speculative decoding's form)");
    return undefined;
  }
  if (tokens.length !== hashes.length * size) {
    skipped.push(`BlockStored with ${tokens.length} token ids for ${hashes.length} blocks of ${size}`);
    return undefined;
  }
  const ids = new Uint32Array(tokens.length);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0)
      throw new EventBatchError("token_ids holds a non-token", "malformed");
    ids[i] = t;
  }
  const seed = loraSeed(typeof fields.lora_name === "string" ? fields.lora_name : undefined);
  const blocks: StoredBlock[] = hashes.map((blockHash, i) => ({
    blockHash,
    tokensHash: localBlockHash(ids.subarray(i * size, (i + 1) * size), seed),
  }));
  const parent = fields.parent_block_hash;
  return {
    type: "kv-block-stored",
    parentHash: parent === null || parent === undefined ? null : u64(parent),
    blocks,
    blockSize: size,
    ...(tier ? { storageTier: tier } : {}),
  };
}

function storageTier(medium: unknown): StorageTier | undefined {
  if (medium === null || medium === undefined) return undefined;
  return MEDIA[String(medium)] ?? "external";
}

function hashList(value: unknown, tag: string): bigint[] {
  if (!Array.isArray(value)) throw new EventBatchError(`${tag} without block_hashes`, "malformed");
  return value.map(u64);
}

const U64 = (1n << 64n) - 1n;

/** An engine hash as u64: ints of either sign reinterpreted, bytes read as their last 8 big-endian. */
function u64(value: unknown): bigint {
  if (typeof value === "bigint") return value & U64;
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value) & U64;
  if (value instanceof Uint8Array && value.length > 0) {
    let out = 0n;
    for (const byte of value.subarray(Math.max(0, value.length - 8))) out = (out << 8n) | BigInt(byte);
    return out;
  }
  throw new EventBatchError(`a block hash that is neither an int nor bytes: ${String(value)}`, "malformed");
}
