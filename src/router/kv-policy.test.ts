import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { chainBlockHash, localBlockHash, type ModelCard } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { ActiveLoad } from "./active-load.js";
import { KvIndexer } from "./kv-index/kv-indexer.js";
import { kvPolicy } from "./kv-policy.js";
import type { WorkerView } from "./worker-view.js";

const BS = 4;
const view = (id: string): WorkerView => ({ id, card: { name: "m" } as ModelCard, inflight: 0, published: undefined });
const tokens = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => i + offset);

function setup(random = () => 0) {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: BS });
  const activeLoad = new ActiveLoad({ routerId: "r", clock: runtime.clock });
  const policy = kvPolicy({ indexer, blockSize: BS, random, activeLoad });
  const cache = (workerId: string, t: number[]) => {
    let parent: bigint | null = null;
    const blocks = [];
    for (let i = 0; i + BS <= t.length; i += BS) {
      const tokensHash = localBlockHash(t.slice(i, i + BS));
      const blockHash: bigint = parent === null ? tokensHash : chainBlockHash(parent, tokensHash);
      blocks.push({ blockHash, tokensHash });
      parent = blockHash;
    }
    indexer.apply({
      type: "kv-event-batch",
      workerId,
      eventId: 1,
      events: [{ type: "kv-block-stored", parentHash: null, blocks, blockSize: BS }],
    });
  };
  return { policy, cache, activeLoad, close: () => runtime.close() };
}

test("temperature 0 picks the worker with the longest cached prefix", async () => {
  const { policy, cache, close } = setup();
  cache("a", tokens(8));
  cache("b", tokens(16));
  assert.equal(policy.select([view("a"), view("b")], { model: "m", tokenIds: tokens(20) }).id, "b");
  await close();
});

test("active load counts: a busy worker loses to an idle one with the same overlap", async () => {
  const { policy, activeLoad, close } = setup();
  activeLoad.add("first", "a", 40, 10);
  assert.equal(policy.select([view("a"), view("b")], { model: "m", tokenIds: tokens(8, 100) }).id, "b");
  activeLoad.prefillDone("first");
  assert.deepEqual(activeLoad.of("a"), { prefillTokens: 0, decodeBlocks: 10 });
  activeLoad.free("first");
  assert.deepEqual(activeLoad.of("a"), { prefillTokens: 0, decodeBlocks: 0 });
  await close();
});

test("equal costs go to the smaller tree, then at random", async () => {
  const { policy, cache, close } = setup(() => 0.99);
  cache("a", [...tokens(4), ...tokens(8, 50)]);
  cache("b", tokens(4));
  assert.equal(policy.select([view("a"), view("b")], { model: "m", tokenIds: tokens(8) }).id, "b");
  assert.equal(
    policy.select([view("c"), view("d")], { model: "m", tokenIds: tokens(8) }).id,
    "d",
    "random picks the last at 0.99",
  );
  await close();
});

test("temperature above 0 samples a softmax over costs: the cheaper worker is likelier, not certain", async () => {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: BS });
  let draw = 0;
  const draws = [0.05, 0.95];
  const activeLoad = new ActiveLoad({ routerId: "r", clock: runtime.clock });
  const policy = kvPolicy({ indexer, blockSize: BS, temperature: 1, activeLoad, random: () => draws[draw++ % 2] as number });
  activeLoad.add("other", "busy", 64, 16);
  const candidates = [view("idle"), view("busy")];
  const picks = [0, 1].map(() => policy.select(candidates, { model: "m", tokenIds: tokens(8) }).id);
  assert.deepEqual(picks, ["idle", "busy"], "a low draw lands on the heavy weight of the idle worker, a high one on the busy");
  await runtime.close();
});

test("a per-request overlap weight of 0 leaves only decode load to compare (Dynamo's router_config_override)", async () => {
  const { policy, cache, activeLoad, close } = setup();
  cache("b", tokens(16));
  // b also decodes another request: 6 blocks, its prefill done.
  activeLoad.add("other", "b", 0, 6);
  const request = { model: "m", tokenIds: tokens(20) };
  // weight 1: a = 20/4 + 5 = 10; b = 4/4 + (6 + 1) = 8. weight 0: a = 5; b = 7.
  assert.equal(policy.select([view("a"), view("b")], request).id, "b");
  assert.equal(policy.select([view("a"), view("b")], { ...request, overrides: { overlapWeight: 0 } }).id, "a");
  await close();
});
