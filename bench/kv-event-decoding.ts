// KV event decoding on one core: vLLM-shaped EventBatch payloads (msgpack) through
// decodeEventBatch, the code an `--engine vllm` worker runs on every batch its engine publishes:
// msgpack decode, field reading, u64 hashes, and Dynamo's XXH3 of each block's 16 token ids.
// Both encodings: events as tagged arrays (vLLM before mid-2026) and as maps (vLLM 0.26).
// Usage: node --import tsx bench/kv-event-decoding.ts
import { encode } from "@msgpack/msgpack";
import { decodeEventBatch } from "../src/engines/zmq-kv-events/event-batch-decoder.js";
import { machine } from "./load/processes.js";

const BLOCK = 16;
const BLOCKS_PER_EVENT = 8;
const EVENTS_PER_BATCH = 16;
const BATCHES = 512;
const ROUNDS = 5;

function batches(form: "array" | "map"): Uint8Array[] {
  let hash = 1n << 63n;
  return Array.from({ length: BATCHES }, (_, b) => {
    const events = Array.from({ length: EVENTS_PER_BATCH }, (_, e) => {
      const hashes = Array.from({ length: BLOCKS_PER_EVENT }, () => hash++);
      const tokens = Array.from({ length: BLOCKS_PER_EVENT * BLOCK }, (_, i) => (b * 7919 + e * 104729 + i) % 151_000);
      const parent = e === 0 ? null : hash - 100n;
      return form === "array"
        ? ["BlockStored", hashes, parent, tokens, BLOCK, null, "GPU", null, null]
        : {
            type: "BlockStored",
            block_hashes: hashes,
            parent_block_hash: parent,
            token_ids: tokens,
            block_size: BLOCK,
            lora_id: null,
            medium: "GPU",
            lora_name: null,
            extra_keys: hashes.map(() => null),
            group_idx: 0,
            kv_cache_spec_kind: "full_attention",
          };
    });
    return encode([Date.now() / 1000, events, 0], { useBigInt64: true });
  });
}

console.log(`KV event decoding, one core — ${machine()}`);
console.log(
  `${BATCHES} batches × ${EVENTS_PER_BATCH} BlockStored × ${BLOCKS_PER_EVENT} blocks of ${BLOCK} tokens, best of ${ROUNDS}\n`,
);
console.log("| encoding | bytes per block | blocks/s | µs per batch |");
console.log("|---|---:|---:|---:|");
for (const form of ["array", "map"] as const) {
  const payloads = batches(form);
  const bytes = payloads.reduce((n, p) => n + p.length, 0);
  const blocks = BATCHES * EVENTS_PER_BATCH * BLOCKS_PER_EVENT;
  for (const p of payloads.slice(0, 64)) decodeEventBatch(p, BLOCK);
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < ROUNDS; r++) {
    const started = performance.now();
    let decoded = 0;
    for (const p of payloads) decoded += decodeEventBatch(p, BLOCK).events.length;
    const ms = performance.now() - started;
    if (decoded !== BATCHES * EVENTS_PER_BATCH) throw new Error(`decoded ${decoded} events`);
    best = Math.min(best, ms);
  }
  console.log(
    `| ${form} | ${(bytes / blocks).toFixed(1)} | ${Math.round(blocks / (best / 1000)).toLocaleString("en-US")} | ${((best * 1000) / BATCHES).toFixed(1)} |`,
  );
}
