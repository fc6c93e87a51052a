import assert from "node:assert/strict";
import { test } from "node:test";
import { encode } from "@msgpack/msgpack";
import { hashBlocks } from "../../protocol/index.js";
import { decodeEventBatch, EventBatchError } from "./event-batch-decoder.js";

// Golden payloads written from the upstream struct definitions (shared/research/dynamo.md §3,
// external-engines.md §0.1): vLLM's EventBatch `[ts, events, data_parallel_rank]` with events as
// tagged arrays (msgspec array_like, vLLM before mid-2026) or as maps with a `type` key (vLLM 0.26).

/**
 * `[1.5, [["BlockStored", [2^64-1, 5], nil, [1..8], 4, nil, "GPU", nil, nil]], 0]`, byte by byte:
 * a u64 hash at its maximum (0xcf + 8 bytes) must come out whole, not rounded to a double.
 */
const ARRAY_FORM = Buffer.from(
  [
    "93",
    "cb3ff8000000000000",
    "91",
    "99",
    "ab426c6f636b53746f726564",
    "92cfffffffffffffffff05",
    "c0",
    "980102030405060708",
    "04",
    "c0",
    "a3475055",
    "c0",
    "c0",
    "00",
  ].join(""),
  "hex",
);

test("the array form: tag and fields by position, u64 hashes whole, tokens keyed by Dynamo's hash", () => {
  const batch = decodeEventBatch(ARRAY_FORM, 4);
  const local = hashBlocks([1, 2, 3, 4, 5, 6, 7, 8], 4).local;
  assert.equal(batch.timestamp, 1.5);
  assert.equal(batch.dataParallelRank, 0);
  assert.deepEqual(batch.skipped, []);
  assert.deepEqual(batch.events, [
    {
      type: "kv-block-stored",
      parentHash: null,
      blocks: [
        { blockHash: 2n ** 64n - 1n, tokensHash: local[0] },
        { blockHash: 5n, tokensHash: local[1] },
      ],
      blockSize: 4,
      storageTier: "device",
    },
  ]);
});

test("the map form (vLLM 0.26): signed and byte hashes as u64, LoRA-seeded keys, other groups skipped, clears", () => {
  const payload = encode(
    [
      2.25,
      [
        {
          type: "BlockStored",
          block_hashes: [-2],
          parent_block_hash: -1,
          token_ids: [9, 8, 7, 6],
          block_size: 4,
          lora_id: null,
          medium: "CPU",
          lora_name: "sql-adapter",
          extra_keys: [null],
          group_idx: 0,
          kv_cache_spec_kind: "full_attention",
          locality: "local",
        },
        { type: "BlockRemoved", block_hashes: [Uint8Array.from([0xaa, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x02])], medium: "GPU" },
        {
          type: "BlockStored",
          block_hashes: [3],
          parent_block_hash: null,
          token_ids: [1, 2, 3, 4],
          block_size: 4,
          kv_cache_spec_kind: "sliding_window",
        },
        { type: "AllBlocksCleared" },
      ],
      1,
    ],
    { useBigInt64: true },
  );
  const batch = decodeEventBatch(payload, 4);
  assert.equal(batch.dataParallelRank, 1);
  assert.deepEqual(batch.skipped, ["BlockStored of a sliding_window group"]);
  assert.deepEqual(batch.events, [
    {
      type: "kv-block-stored",
      parentHash: 2n ** 64n - 1n,
      blocks: [{ blockHash: 2n ** 64n - 2n, tokensHash: hashBlocks([9, 8, 7, 6], 4, "sql-adapter").local[0] }],
      blockSize: 4,
      storageTier: "host_pinned",
    },
    // The last 8 bytes, big-endian: 00 00 00 00 00 00 01 02.
    { type: "kv-block-removed", blockHashes: [0x0102n], storageTier: "device" },
    { type: "kv-cache-cleared" },
  ]);
});

test("a batch map, a missing rank, and the older array event with trailing fields decode alike", () => {
  const event = ["BlockStored", [1], null, [1, 2, 3, 4], 4, null, null, null, null, 0, "full_attention", null, "extra"];
  const asMap = decodeEventBatch(encode({ ts: 1, events: [event] }), 4);
  const asArray = decodeEventBatch(encode([1, [event]]), 4);
  assert.deepEqual(asMap, asArray);
  assert.equal(asArray.dataParallelRank, 0);
  assert.equal(asArray.events.length, 1);
});

test("blocks of another size are a configuration error naming the flag, never a silent miss", () => {
  assert.throws(
    () => decodeEventBatch(ARRAY_FORM, 16),
    (e: EventBatchError) =>
      e.kind === "block-size" &&
      /the engine stores blocks of 4 tokens and the router hashes blocks of 16: start the worker with --block-size 4/.test(
        e.message,
      ),
  );
});

test("malformed and truncated batches throw a malformed error; unreadable events are skipped with a reason", () => {
  for (const bad of [
    Buffer.from("not msgpack at all"),
    ARRAY_FORM.subarray(0, ARRAY_FORM.length - 6),
    encode("a string"),
    encode([1, "no events"]),
    encode([1, [[42]]]),
    encode([1, [["BlockStored", "hashes", null, [1, 2, 3, 4], 4]]]),
    encode([1, [["BlockStored", [1], null, [1, 2, -3, 4], 4]]]),
    encode([1, [["BlockStored", [1.5], null, [1, 2, 3, 4], 4]]]),
  ]) {
    assert.throws(
      () => decodeEventBatch(bad, 4),
      (e: EventBatchError) => e instanceof EventBatchError && e.kind === "malformed",
    );
  }
  const odd = decodeEventBatch(
    encode([
      1,
      [
        ["BlockStored", [1, 2], null, [1, 2, 3, 4], 4],
        [
          "BlockStored",
          [1],
          null,
          [
            [1, 2],
            [3, 4],
            [5, 6],
            [7, 8],
          ],
          4,
        ],
        ["SomethingNew", 1],
      ],
    ]),
    4,
  );
  assert.deepEqual(odd.events, []);
  assert.deepEqual(odd.skipped, [
    "BlockStored with 4 token ids for 2 blocks of 4",
    "BlockStored with token pairs (speculative decoding's form)",
    "SomethingNew: not a KV event armature reads",
  ]);
});
