import assert from "node:assert/strict";
import { test } from "node:test";
import { type GenerateRequest, hashBlocks, type KvEvent, type RequestEnd, type StorageTier } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import type { TierCounts } from "./lower-tiers.js";
import { MockerEngine, type MockerEngineOptions } from "./mocker-engine.js";
import { ObjectTier } from "./object-tier.js";

// Block size 4 and 250 000 KV bytes per token: a block is 1 MB, which takes 0.04 ms from the host
// (25 GB/s = 25e6 bytes/ms), 0.2 ms from disk (5 GB/s) and 1 ms from the object store (1 GB/s).
// Prefill costs 10 ms plus 1 ms per new token, a decode step 1 ms.
const timing = { prefillMs: (t: number) => (t > 0 ? 10 + t : 0), decodeMs: () => 1 };

function engine(clock: VirtualClock, options: MockerEngineOptions) {
  const e = new MockerEngine({ clock, blockSize: 4, kvBytesPerToken: 250_000, timing, ...options });
  const events: KvEvent[] = [];
  const tierHits: TierCounts[] = [];
  e.onKvEvents((batch) => events.push(...batch));
  e.onTierHits((_, tokens) => tierHits.push({ ...tokens }));
  return { engine: e, events, tierHits };
}

const prompt = (n: number, offset: number): number[] => Array.from({ length: n }, (_, i) => 65 + ((i * 7 + offset) % 26));

async function run(e: MockerEngine, clock: VirtualClock, tokens: number[]): Promise<{ end: RequestEnd; ttftMs: number }> {
  const req: GenerateRequest = {
    type: "generate-request",
    requestId: `r${clock.now()}`,
    model: "m",
    tokenIds: tokens,
    sampling: { temperature: 0 },
    maxTokens: 2,
  };
  const start = clock.now();
  let ttftMs = -1;
  let end: RequestEnd | undefined;
  const consume = (async () => {
    for await (const item of e.generate(req, { signal: new AbortController().signal })) {
      if (item.type === "token-delta" && ttftMs < 0) ttftMs = clock.now() - start;
      if (item.type === "request-end") end = item;
    }
  })();
  consume.catch(() => {});
  await clock.runUntilIdle();
  await consume;
  return { end: end as RequestEnd, ttftMs };
}

/** Block hashes of stored (or removed) events on `tier`, in order. */
function stored(events: readonly KvEvent[], tier: StorageTier): bigint[] {
  return events.flatMap((e) => (e.type === "kv-block-stored" && e.storageTier === tier ? e.blocks.map((b) => b.blockHash) : []));
}
function removed(events: readonly KvEvent[], tier: StorageTier): bigint[] {
  return events.flatMap((e) => (e.type === "kv-block-removed" && e.storageTier === tier ? e.blockHashes : []));
}

// 21 tokens: 5 full blocks (the 21st token and the decoded one share a 6th, partial block).
const P = prompt(21, 0);
const Q = prompt(21, 13);
const p = hashBlocks(P, 4).sequence.slice(0, 5);

test("a block used by one request stays off disk; used by a second (frequency 2) it goes there, from host or device", async () => {
  for (const hostKvBlocks of [16, 0]) {
    const clock = new VirtualClock();
    const { engine: e, events } = engine(clock, { kvBlocks: 16, hostKvBlocks, diskKvBlocks: 16 });
    await run(e, clock, P);
    await run(e, clock, Q);
    assert.deepEqual(stored(events, "disk"), [], `host ${hostKvBlocks}: P and Q used once each`);
    await run(e, clock, P); // a prefix hit: P's 5 blocks reach frequency 2
    assert.deepEqual(stored(events, "disk"), p, `host ${hostKvBlocks}: P's blocks, parents first`);
    const diskEvents = events.filter((x) => x.type === "kv-block-stored" && x.storageTier === "disk");
    assert.deepEqual(
      diskEvents.map((x) => x.type === "kv-block-stored" && x.parentHash),
      [null, ...p.slice(0, 4)],
    );
    await run(e, clock, P); // frequency 4: already there, nothing new
    assert.equal(stored(events, "disk").length, 5);
    await e.close();
  }
});

test("a prefix split across host, disk and object store comes back from the fastest tier of each block, at each tier's bandwidth", async () => {
  const clock = new VirtualClock();
  const object = new ObjectTier({ capacityBlocks: 64, blockSize: 4 });
  const { engine: e, events, tierHits } = engine(clock, { kvBlocks: 6, hostKvBlocks: 7, diskKvBlocks: 9, objectTier: object });
  // P twice: P's 5 blocks on device, host, disk (frequency 2) and object store. Every tier frees
  // tail first, so on each the LRU order is p4 (oldest) … p0.
  await run(e, clock, P);
  await run(e, clock, P);
  // Q twice: its 6 blocks take the whole device (P's 5 evicted). On the host (7) q0…q4 push out
  // p4, p3, p2; on disk (9), from Q's second run, they push out p4. The object store keeps all.
  await run(e, clock, Q);
  await run(e, clock, Q);
  assert.deepEqual(removed(events, "host_pinned"), [p[4], p[3], p[2]]);
  assert.deepEqual(removed(events, "disk"), [p[4]]);
  const again = await run(e, clock, P);
  // p0, p1 from the host, p2, p3 from disk, p4 from the object store:
  //   2 × 1 MB / 25e6 B/ms = 0.08 ms, 2 × 1 MB / 5e6 B/ms = 0.4 ms, 1 × 1 MB / 1e6 B/ms = 1 ms
  //   copies 1.48 ms + prefill of the 21st token (10 + 1 ms) = 12.48 ms to the first token.
  assert.deepEqual(tierHits.at(-1), { host: 8, disk: 8, object: 4 });
  assert.equal(again.end.cachedTokens, 20);
  assert.equal(again.end.hostCachedTokens, 8, "request-end's host part stays the host's alone");
  assert.ok(Math.abs(again.ttftMs - 12.48) < 1e-9, `TTFT ${again.ttftMs}`);
  // The device registers P's blocks again in prefix order as they are onboarded.
  const deviceStored = events.filter((x) => x.type === "kv-block-stored" && x.storageTier === undefined);
  assert.deepEqual(
    deviceStored.slice(-5).map((x) => x.type === "kv-block-stored" && x.blocks[0]?.blockHash),
    p,
  );
  await e.close();
});

test("workers share the object tier: B onboards what only A computed, writes only its new block, and evictions are told by the writer", async () => {
  const clock = new VirtualClock();
  const object = new ObjectTier({ capacityBlocks: 6, blockSize: 4 });
  const a = engine(clock, { kvBlocks: 16, objectTier: object });
  const b = engine(clock, { kvBlocks: 16, objectTier: object });
  await run(a.engine, clock, P);
  assert.deepEqual(stored(a.events, "external"), p, "A writes P's 5 blocks through, parents first");
  // B's prompt is P's first 20 tokens and 5 more: blocks p0…p4, then one of its own (b5).
  const longer = [...P.slice(0, 20), ...prompt(5, 3)];
  const b5 = hashBlocks(longer, 4).sequence[5] as bigint;
  const fromObject = await run(b.engine, clock, longer);
  // 5 blocks × 1 ms from the object store, then 5 new tokens prefilled (10 + 5 ms): 20 ms.
  assert.deepEqual(b.tierHits.at(-1), { host: 0, disk: 0, object: 20 });
  assert.equal(fromObject.end.cachedTokens, 20);
  assert.equal(fromObject.ttftMs, 20);
  assert.deepEqual(stored(b.events, "external"), [b5], "P's blocks are not written again");
  const b5Event = b.events.find((x) => x.type === "kv-block-stored" && x.storageTier === "external");
  assert.equal(b5Event?.type === "kv-block-stored" && b5Event.parentHash, p[4]);
  // Each worker's dump lists the object blocks it wrote (b5's parent p4 is A's).
  const dumped = (x: MockerEngine) => stored(x.dumpKvEvents(), "external");
  assert.deepEqual([dumped(a.engine), dumped(b.engine)], [p, [b5]]);
  // B freed its blocks tail first, so the store's LRU order is b5, p4, …, p0. A prompt of two new
  // blocks pushes out b5 (B tells) and p4 (A tells).
  await run(b.engine, clock, prompt(9, 5));
  assert.deepEqual(removed(b.events, "external"), [b5]);
  assert.deepEqual(removed(a.events, "external"), [p[4]]);
  await Promise.all([a.engine.close(), b.engine.close()]);
});

test("clearing a worker's cache empties its host and disk tiers and announces again its blocks in the shared object store", async () => {
  const clock = new VirtualClock();
  const object = new ObjectTier({ capacityBlocks: 16, blockSize: 4 });
  const { engine: e, events } = engine(clock, { kvBlocks: 16, hostKvBlocks: 16, diskKvBlocks: 16, objectTier: object });
  await run(e, clock, P);
  await run(e, clock, P);
  const tiersOf = (list: readonly KvEvent[]) =>
    list.map((x) => (x.type === "kv-block-stored" ? (x.storageTier ?? "device") : x.type));
  assert.deepEqual(tiersOf(e.dumpKvEvents()), [
    ...Array(5).fill("device"),
    ...Array(5).fill("host_pinned"),
    ...Array(5).fill("disk"),
    ...Array(5).fill("external"),
  ]);
  const before = events.length;
  e.clearCache();
  assert.deepEqual(tiersOf(events.slice(before)), ["kv-cache-cleared", ...Array(5).fill("external")]);
  assert.deepEqual(tiersOf(e.dumpKvEvents()), Array(5).fill("external"));
  await e.close();
});

test("an object tier of another block size is refused", () => {
  const object = new ObjectTier({ capacityBlocks: 4, blockSize: 16 });
  assert.throws(() => new MockerEngine({ blockSize: 4, objectTier: object }), { code: "CONFIG_INVALID" });
});
