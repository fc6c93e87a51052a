import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { chainBlockHash, hashBlocks, localBlockHash, type ModelCard, type StorageTier } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { ActiveLoad } from "./active-load.js";
import { KvIndexer } from "./kv-index/kv-indexer.js";
import { kvPolicy } from "./kv-policy.js";
import type { WorkerView } from "./worker-view.js";

const BS = 4;
const view = (id: string): WorkerView => ({ id, card: { name: "m" } as ModelCard, inflight: 0, published: undefined });
const tokens = (n: number, offset = 0) => Array.from({ length: n }, (_, i) => i + offset);

function setup(random = () => 0, exclusiveFactor?: number) {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: BS });
  const activeLoad = new ActiveLoad({ routerId: "r", clock: runtime.clock });
  const policy = kvPolicy({ indexer, blockSize: BS, random, activeLoad, ...(exclusiveFactor ? { exclusiveFactor } : {}) });
  const eventIds = new Map<string, number>();
  const cache = (workerId: string, t: number[], storageTier?: StorageTier) => {
    let parent: bigint | null = null;
    const blocks = [];
    for (let i = 0; i + BS <= t.length; i += BS) {
      const tokensHash = localBlockHash(t.slice(i, i + BS));
      const blockHash: bigint = parent === null ? tokensHash : chainBlockHash(parent, tokensHash);
      blocks.push({ blockHash, tokensHash });
      parent = blockHash;
    }
    const eventId = (eventIds.get(workerId) ?? 0) + 1;
    eventIds.set(workerId, eventId);
    indexer.apply({
      type: "kv-event-batch",
      workerId,
      eventId,
      events: [{ type: "kv-block-stored", parentHash: null, blocks, blockSize: BS, storageTier }],
    });
  };
  return { policy, cache, activeLoad, indexer, close: () => runtime.close() };
}

test("temperature 0 picks the worker with the longest cached prefix", async () => {
  const { policy, cache, close } = setup();
  cache("a", tokens(8));
  cache("b", tokens(16));
  assert.equal(policy.select([view("a"), view("b")], { model: "m", tokenIds: tokens(20) }).id, "b");
  await close();
});

test("a prefix on a worker's host tier beats none, and loses to the same prefix on a device", async () => {
  const { policy, cache, indexer, close } = setup();
  cache("host", tokens(16), "host_pinned");
  const request = { model: "m", tokenIds: tokens(20) };
  assert.equal(policy.select([view("none"), view("host")], request).id, "host");
  cache("device", tokens(16));
  assert.equal(policy.select([view("host"), view("device")], request).id, "device");
  // 1 block on the device and 3 more on the host (saving 1 + 0.8 × 3 blocks of prefill, needing 4
  // new device blocks) beat 2 blocks on a device (saving 2, needing 3).
  cache("split", tokens(4));
  cache("split", tokens(16), "host_pinned");
  cache("part", tokens(8));
  assert.equal(policy.select([view("part"), view("split")], request).id, "split");
  const matches = indexer.findMatches(
    Array.from({ length: 5 }, (_, i) => localBlockHash(tokens(20).slice(i * BS, (i + 1) * BS))),
  );
  assert.equal(matches.scores.get("split"), 1, "device scores count the device alone");
  assert.equal(matches.lowerTierScores?.get("split"), 4);
  assert.equal(matches.treeSizes.get("split"), 1);
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
  // weight 4 (the default): a = 4 × 20/4 + 5 = 25; b = 4 × 4/4 + (6 + 1) = 11. weight 0: a = 5; b = 7.
  assert.equal(policy.select([view("a"), view("b")], request).id, "b");
  assert.equal(policy.select([view("a"), view("b")], { ...request, overrides: { overlapWeight: 0 } }).id, "a");
  await close();
});

test("by default a cached prefix outweighs a decode load that Dynamo's weight 1 would flee (weight 4)", async () => {
  // Exclusive factor 1: the prefix counts at the overlap weight alone (its lead is tested below).
  const { policy, cache, activeLoad, close } = setup(() => 0, 1);
  cache("cached", tokens(16));
  // The worker caching 4 of the request's 5 blocks decodes another request holding 10 blocks.
  activeLoad.add("other", "cached", 0, 10);
  const request = { model: "m", tokenIds: tokens(20) };
  // weight w: cached = w × 4/4 + (10 + 5 − 4); idle = w × 20/4 + 5.
  // w = 4: 15 against 25, the prefix wins; w = 1: 12 against 10, the idle worker wins.
  assert.equal(policy.select([view("idle"), view("cached")], request).id, "cached");
  assert.equal(policy.select([view("idle"), view("cached")], { ...request, overrides: { overlapWeight: 1 } }).id, "idle");
  await close();
});

test("a prefix whose head is on the device and tail only on the host counts whole (no undercount)", async () => {
  const { cache, indexer, close } = setup();
  cache("w", tokens(8));
  cache("w", tokens(16), "host_pinned");
  // The host tier dropped the head (blocks 0 and 1): the host alone no longer chains from the root.
  const hash = (i: number) => {
    let parent: bigint | null = null;
    for (let b = 0; b <= i; b++) {
      const local = localBlockHash(tokens(16).slice(b * BS, (b + 1) * BS));
      parent = parent === null ? local : chainBlockHash(parent, local);
    }
    return parent as bigint;
  };
  indexer.apply({
    type: "kv-event-batch",
    workerId: "w",
    eventId: 3,
    events: [{ type: "kv-block-removed", blockHashes: [hash(0), hash(1)], storageTier: "host_pinned" }],
  });
  const matches = indexer.findMatches(
    Array.from({ length: 5 }, (_, i) => localBlockHash(tokens(20).slice(i * BS, (i + 1) * BS))),
  );
  assert.equal(matches.scores.get("w"), 2);
  assert.equal(matches.lowerTierScores?.get("w"), 4, "2 on the device, then 2 from the host");
  assert.deepEqual(matches.lowerTierBlocks?.get("w"), { host: 2, disk: 0, external: 0 });
  await close();
});

test("blocks on the shared external tier count for every worker, at the saving each worker measured", async () => {
  const { policy, cache, indexer, close } = setup();
  cache("a", tokens(16), "external");
  const query = Array.from({ length: 5 }, (_, i) => localBlockHash(tokens(20).slice(i * BS, (i + 1) * BS)));
  assert.equal(indexer.findMatches(query).sharedBlocks, 4, "announced by a, loadable by anyone");
  // A card's KV is 1,000 bytes per token. b measured 1,000 prefill tokens/s and loads from the
  // external tier at 1e8 B/s: saving = 1 − 1000 × 1000 / 1e8 = 0.99 of each of the 4 blocks.
  // c measured nothing: the fallback 0.8. Cost (BS 4, 20 tokens, 5 new decode blocks):
  //   b: prefill (20 − 4 × 4 × 0.99) / 4 = 1.04, + 5 = 6.04;  c: (20 − 12.8) / 4 = 1.8, + 5 = 6.8.
  const card = { name: "m", kvBytesPerToken: 1000 } as ModelCard;
  const measured = (id: string, bytesPerSecond: number): WorkerView => ({
    id,
    card,
    inflight: 0,
    published: {
      type: "worker-load",
      workerId: id,
      activeRequests: 0,
      waitingRequests: 0,
      activeKvBlocks: 0,
      totalKvBlocks: 100,
      kvCosts: { prefillTokensPerSecond: 1000, onboardBytesPerSecond: { external: bytesPerSecond } },
    },
  });
  const plain: WorkerView = { id: "c", card, inflight: 0, published: undefined };
  const request = { model: "m", tokenIds: tokens(20) };
  assert.equal(policy.select([plain, measured("b", 1e8)], request).id, "b");
  // Measured slower than recomputing (1e5 B/s: 1 − 10 < 0, clamped to 0): b saves nothing, cost 5 + 5 = 10.
  assert.equal(policy.select([plain, measured("b", 1e5)], request).id, "c");
  await close();
});

test("each model's prompts are hashed at the block size its workers use, as the index tells it", async () => {
  const runtime = createEmbeddedRuntime();
  const activeLoad = new ActiveLoad({ routerId: "r", clock: runtime.clock });
  const asked: number[] = [];
  // An index that holds 2 blocks of 8 tokens on worker "a" for model "wide" and knows no other size.
  const wideHashes = hashBlocks(tokens(20), 8).local;
  const indexer = {
    blockSizeOf: (model: string) => (model === "wide" ? 8 : undefined),
    findMatches(hashes: readonly bigint[]) {
      asked.push(hashes.length);
      const held = hashes[0] === wideHashes[0] && hashes[1] === wideHashes[1];
      return { scores: new Map(held ? [["a", 2]] : []), treeSizes: new Map<string, number>() };
    },
  };
  const policy = kvPolicy({ indexer, blockSize: BS, random: () => 0.99, activeLoad });
  assert.equal(policy.select([view("b"), view("a")], { model: "wide", tokenIds: tokens(20) }).id, "a");
  assert.equal(policy.select([view("b"), view("a")], { model: "m", tokenIds: tokens(20) }).id, "a", "no match: at random (0.99)");
  assert.equal(policy.overlapBlocks?.("a", { model: "m", tokenIds: tokens(20) }), 0);
  assert.deepEqual(asked, [2, 5], "20 tokens: 2 blocks of 8 for wide, 5 of 4 (the policy's own) for m");
  await runtime.close();
});

test("a prefix only one worker holds counts its lead 8 overlap weights: the turn stays where Dynamo's cost sends it away", async () => {
  for (const [factor, expected] of [
    [1, "idle"],
    [undefined, "home"],
  ] as const) {
    const { policy, cache, activeLoad, close } = setup(() => 0, factor);
    cache("home", tokens(16));
    // The worker that alone holds 4 of the request's 5 blocks decodes other requests holding 30.
    activeLoad.add("other", "home", 0, 30);
    // Weight 4: home = 4 × 4/4 + (30 + 5 − 4) = 35; idle = 4 × 20/4 + 5 = 25. Its lead over the
    // runner-up (idle, 0 blocks) is 4 blocks: factor 8 takes (8 − 1) × 4 × 4 = 112 off, −77.
    assert.equal(
      policy.select([view("idle"), view("home")], { model: "m", tokenIds: tokens(20) }).id,
      expected,
      `factor ${factor}`,
    );
    await close();
  }
});

test("a prefix two workers hold gives neither a lead: a shared system prompt does not pull new conversations from an idle worker", async () => {
  const { policy, cache, activeLoad, close } = setup();
  const request = { model: "m", tokenIds: [...tokens(8), ...tokens(12, 100)] };
  cache("a", tokens(8));
  activeLoad.add("on-a", "a", 0, 20);
  // One holder: a = 4 × 12/4 + (20 + 5 − 2) = 35, less its lead of 2 blocks × (8 − 1) × 4 = 56: −21;
  // idle = 4 × 20/4 + 5 = 25. The only holder wins.
  assert.equal(policy.select([view("idle"), view("a")], request).id, "a");
  cache("b", tokens(8));
  activeLoad.add("on-b", "b", 0, 20);
  // Two holders: the runner-up holds the same 2 blocks, so no lead: a = b = 35 against idle's 25.
  assert.equal(policy.select([view("idle"), view("a"), view("b")], request).id, "idle");
  await close();
});
