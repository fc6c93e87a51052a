import assert from "node:assert/strict";
import { test } from "node:test";
import { localBlockHash, loraSeed } from "../../protocol/index.js";
import { TrtllmKvEventPoller } from "./trtllm-kv-event-poller.js";
import { decodeTrtllmEvents } from "./trtllm-kv-events.js";

// Answers of trtllm-serve's `POST /kv_cache_events`, written by hand in the shape of
// `tensorrt_llm/_utils.py`'s KVCacheEventSerializer (blocks of 4 tokens here).
const token = (id: number) => ({ type: "unique_token", token_id: id, token_extra_id: 0 });
const block = (hash: string, ids: number[], level = 0) =>
  `{"type":"stored_block","block_hash":${hash},"tokens":${JSON.stringify(ids.map(token))},"cache_level":${level},"priority":35}`;
const event = (id: number, data: string) => `{"event_id":${id},"data":${data},"window_size":4096}`;

test("created, stored, removed: the engine's 64-bit hashes kept to the last digit, each block keyed by its tokens", () => {
  const answer = `[${[
    event(0, '{"type":"created","num_blocks_per_cache_level":[4096,0]}'),
    event(
      1,
      `{"type":"stored","parent_hash":null,"blocks":[${block("18446744073709551557", [1, 2, 3, 4])},${block("9007199254740993", [5, 6, 7, 8])}]}`,
    ),
    event(2, `{"type":"stored","parent_hash":9007199254740993,"blocks":[${block("77", [9, 10, 11, 12], 1)}]}`),
    event(3, '{"type":"updated","block_hash":77,"cache_level":{"old_value":0,"new_value":1},"priority":null}'),
    event(4, '{"type":"removed","block_hashes":[18446744073709551557,77]}'),
  ].join(",")}]`;
  const { events, skipped, ids } = decodeTrtllmEvents(answer, 4);
  const key = (tokens: number[]) => localBlockHash(Uint32Array.from(tokens), loraSeed(undefined));
  assert.deepEqual(ids, [0, 1, 2, 3, 4]);
  assert.deepEqual(skipped, []);
  assert.deepEqual(events, [
    { type: "kv-cache-cleared" },
    {
      type: "kv-block-stored",
      parentHash: null,
      blocks: [
        { blockHash: 18446744073709551557n, tokensHash: key([1, 2, 3, 4]) },
        { blockHash: 9007199254740993n, tokensHash: key([5, 6, 7, 8]) },
      ],
      blockSize: 4,
    },
    {
      type: "kv-block-stored",
      parentHash: 9007199254740993n,
      blocks: [{ blockHash: 77n, tokensHash: key([9, 10, 11, 12]) }],
      blockSize: 4,
      storageTier: "host_pinned",
    },
    { type: "kv-block-removed", blockHashes: [18446744073709551557n, 77n] },
  ]);
});

test("another block size is a block-size error; what is not an event list is malformed; unknown types are skipped by name", () => {
  assert.throws(
    () => decodeTrtllmEvents(`[${event(0, `{"type":"stored","parent_hash":null,"blocks":[${block("1", [1, 2])}]}`)}]`, 4),
    (error: Error & { kind?: string }) =>
      error.kind === "block-size" && /blocks of 2 tokens .* --block-size 2/.test(error.message),
  );
  for (const bad of ["{", "{}", '[{"data":{"type":"created"}}]', `[${event(0, '{"type":"removed","block_hashes":["x"]}')}]`]) {
    assert.throws(
      () => decodeTrtllmEvents(bad, 4),
      (error: Error & { kind?: string }) => error.kind === "malformed",
    );
  }
  assert.deepEqual(decodeTrtllmEvents(`[${event(0, '{"type":"moved"}')}]`, 4).skipped, ["moved: not a KV event armature reads"]);
});

test("the poller counts ids the server's buffer lost, says a block-size error once, and drops what it cannot read", () => {
  const dropped: string[] = [];
  const fatal: string[] = [];
  const got: unknown[] = [];
  const poller = new TrtllmKvEventPoller({
    url: "http://127.0.0.1:9/kv_cache_events",
    blockSize: 4,
    onEvents: (events) => got.push(...events),
    onDropped: (reason) => dropped.push(reason),
    onFatal: (message) => fatal.push(message),
  });
  poller.handle(
    `[${event(0, '{"type":"created","num_blocks_per_cache_level":[1]}')},${event(1, '{"type":"removed","block_hashes":[5]}')}]`,
  );
  poller.handle(`[${event(4, '{"type":"removed","block_hashes":[6]}')}]`);
  poller.handle("not json");
  assert.equal(got.length, 3);
  assert.deepEqual(dropped.slice(0, 1), ["events 2 to 3 were dropped by the server's buffer (event_buffer_max_size)"]);
  assert.match(dropped[1] as string, /an answer that cannot be read: not JSON/);
  const wrong = `[${event(5, `{"type":"stored","parent_hash":null,"blocks":[${block("1", [1, 2])}]}`)}]`;
  poller.handle(wrong);
  poller.handle(wrong);
  assert.equal(fatal.length, 1);
  assert.match(fatal[0] as string, /--block-size 2/);
});
