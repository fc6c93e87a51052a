import assert from "node:assert/strict";
import { test } from "node:test";
import type { GenerateRequest, KvBlockStored, KvEvent, RequestEnd } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import { HostTier } from "./host-tier.js";
import { MockerEngine, type MockerEngineOptions } from "./mocker-engine.js";
import { polynomialTimingModel } from "./timing-model.js";

// Block size 4, 8 device blocks: a 21-token prompt fills 5 full blocks, and a second different
// prompt of the same size pushes the first one's blocks off the device.
function setup(options: MockerEngineOptions = {}) {
  const clock = new VirtualClock();
  const engine = new MockerEngine({ clock, blockSize: 4, kvBlocks: 8, ...options });
  const events: KvEvent[] = [];
  engine.onKvEvents((batch) => events.push(...batch));
  return { clock, engine, events };
}

const prompt = (n: number, offset: number): number[] => Array.from({ length: n }, (_, i) => 65 + ((i * 7 + offset) % 26));

async function run(engine: MockerEngine, clock: VirtualClock, tokens: number[]): Promise<{ end: RequestEnd; ttftMs: number }> {
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
    for await (const item of engine.generate(req, { signal: new AbortController().signal })) {
      if (item.type === "token-delta" && ttftMs < 0) ttftMs = clock.now() - start;
      if (item.type === "request-end") end = item;
    }
  })();
  consume.catch(() => {});
  await clock.runUntilIdle();
  await consume;
  return { end: end as RequestEnd, ttftMs };
}

const A = prompt(21, 0);
const B = prompt(21, 13);

test("a prefix the device evicted comes back from the host tier by a copy, not a recomputation", async () => {
  const withHost = setup({ hostKvBlocks: 64 });
  const without = setup();
  for (const { engine, clock } of [withHost, without]) {
    await run(engine, clock, A);
    await run(engine, clock, B);
  }
  const again = await run(withHost.engine, withHost.clock, A);
  const recomputed = await run(without.engine, without.clock, A);

  // B took 6 of the 8 device blocks: A's last 3 full blocks went (freed tail first), its first 2 stayed.
  assert.equal(recomputed.end.cachedTokens, 8, "without a host tier only A's head is left");
  assert.equal(recomputed.end.hostCachedTokens, undefined);
  assert.equal(again.end.cachedTokens, 20, "all 5 full blocks of A are served from cache");
  assert.equal(again.end.hostCachedTokens, 12, "3 of them copied back from the host");
  const model = polynomialTimingModel();
  const copyMs = (12 * 131072) / 25e6;
  assert.ok(Math.abs(again.ttftMs - (copyMs + model.prefillMs(1))) < 1e-9, `TTFT ${again.ttftMs}`);
  assert.equal(recomputed.ttftMs, model.prefillMs(13));
  await Promise.all([withHost.engine.close(), without.engine.close()]);
});

test("the host tier's events carry its storage tier, chain their parents and report evictions", async () => {
  const { engine, clock, events } = setup({ hostKvBlocks: 6 });
  await run(engine, clock, A);
  await run(engine, clock, B);
  const hostStored = events.filter((e): e is KvBlockStored => e.type === "kv-block-stored" && e.storageTier === "host_pinned");
  assert.equal(hostStored.length, 10, "5 full blocks of A, then 5 of B");
  // Each host block names the host block before it as parent (first of each prompt: none).
  const known = new Set<bigint>();
  for (const e of hostStored) {
    if (e.parentHash !== null) assert.ok(known.has(e.parentHash), "parent stored on the host first");
    known.add((e.blocks[0] as KvBlockStored["blocks"][number]).blockHash);
  }
  const hostRemoved = events.filter((e) => e.type === "kv-block-removed" && e.storageTier === "host_pinned");
  assert.equal(hostRemoved.length, 4, "6 host blocks hold B's 5 and one of A's");
  // Device events keep no tier (the device, as Dynamo reads a missing medium).
  assert.ok(events.some((e) => e.type === "kv-block-stored" && e.storageTier === undefined));
  const dumped = engine.dumpKvEvents().filter((e) => e.type === "kv-block-stored" && e.storageTier === "host_pinned");
  // A's blocks were touched tail first when it ended, so its head outlived the rest on the host.
  assert.equal(dumped.length, 6, "the dump lists B's 5 blocks and A's head block");
  await engine.close();
});

test("HostTier evicts least recently used, and touching keeps a block", () => {
  const events: KvEvent[] = [];
  const host = new HostTier(2, 4, (e) => events.push(...e));
  host.offload(1n, null, 11n);
  host.offload(2n, 1n, 12n);
  assert.equal(host.touch(1n), true);
  host.offload(3n, 2n, 13n);
  assert.deepEqual([host.has(1n), host.has(2n), host.has(3n)], [true, false, true]);
  assert.deepEqual(events.at(-2), { type: "kv-block-removed", blockHashes: [2n], storageTier: "host_pinned" });
  host.offload(3n, 2n, 13n);
  assert.equal(events.length, 4, "offloading a block already there only touches it");
  assert.equal(host.touch(9n), false);
});

test("HostTier's dump lists parents before children and leaves out blocks whose parent it evicted", () => {
  const host = new HostTier(3, 4, () => {});
  host.offload(1n, null, 11n);
  host.offload(2n, 1n, 12n);
  host.offload(3n, 2n, 13n);
  host.touch(3n);
  host.touch(2n);
  host.offload(4n, null, 14n); // evicts block 1, the least recently used: 2 and 3 lose their root
  host.offload(5n, 4n, 15n); // evicts block 3
  const dumped = host.dump().map((e) => (e.type === "kv-block-stored" ? e.blocks[0]?.blockHash : undefined));
  assert.deepEqual(dumped, [4n, 5n]);
});
