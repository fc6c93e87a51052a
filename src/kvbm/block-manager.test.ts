import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { PrometheusMeter, silentLogger } from "../observability/index.js";
import { hashBlocks, type KvEvent } from "../protocol/index.js";
import { MemoryObjectStore, type ObjectStore } from "../transfer/index.js";
import type { KvBlockManager } from "./block-manager.js";
import { hex } from "./block-record.js";
import { type KvbmSettings, openKvBlockManager } from "./kvbm-settings.js";

const B = 4;
const LAYOUT = 99n;
const tokens = Array.from({ length: 4 * B }, (_, i) => 1000 + i);
const hashes = hashBlocks(tokens, B);
/** Payload of block i: 32 bytes that say which block they are. */
const payload = (i: number) => Buffer.alloc(32, i + 1);

async function open(settings: KvbmSettings, meter = new PrometheusMeter()) {
  const events: KvEvent[] = [];
  const manager = await openKvBlockManager(settings, {
    blockSize: B,
    layout: LAYOUT,
    modelName: "m",
    workerLabel: "0",
    meter,
    logger: silentLogger,
    emit: (e) => events.push(...e),
  });
  return { manager, events, meter };
}

/** One request's pass: count the use, offload what the tiers lack (cutting from "the device"). */
async function serve(manager: KvBlockManager) {
  manager.noteUse(hashes.sequence);
  const plan = manager.plan(hashes);
  await manager.offload(hashes, plan, plan.toCut.map(payload));
  await manager.flushed();
  return plan;
}

async function metric(meter: PrometheusMeter, line: string): Promise<number> {
  const text = await meter.render();
  const found = text.split("\n").find((l) => l.startsWith(line));
  return found ? Number(found.slice(found.lastIndexOf(" ") + 1)) : 0;
}

test("write-through to the host tier, and the longest prefix comes back in order from it", async () => {
  const { manager, events, meter } = await open({ hostBytes: 1024 });
  const plan = await serve(manager);
  assert.deepEqual(plan.toCut, [0, 1, 2, 3]);
  assert.deepEqual(events, [
    {
      type: "kv-block-stored",
      parentHash: null,
      blocks: hashes.sequence.map((blockHash, i) => ({ blockHash, tokensHash: hashes.local[i] })),
      blockSize: B,
      storageTier: "host_pinned",
    },
  ]);
  assert.deepEqual(manager.plan(hashes).needed, [], "nothing left to offload");
  const back = await manager.onboard(hashes, 3, 0);
  assert.deepEqual(
    back?.records.map((r) => r.payload),
    [payload(0), payload(1), payload(2)],
  );
  assert.deepEqual(back?.byTier, { host: 3, disk: 0, object: 0 });
  assert.equal(await manager.onboard(hashes, 3, 12), undefined, "the device already holds as much");
  assert.equal(await metric(meter, 'armature_kvbm_offload_blocks_total{model="m",from="device",to="host"}'), 4);
  assert.equal(await metric(meter, 'armature_kvbm_matched_tokens_total{model="m"}'), 12);
});

test("host → disk only for blocks used twice; a restarted worker finds its disk blocks and announces them", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
  const first = await open({ hostBytes: 1024, diskDirectory: directory });
  await serve(first.manager);
  assert.equal(
    first.events.filter((e) => e.type === "kv-block-stored" && e.storageTier === "disk").length,
    0,
    "used once: host only",
  );
  const second = await serve(first.manager);
  assert.deepEqual([second.needed, second.toCut], [[0, 1, 2, 3], []], "the disk copy comes from the host tier");
  await first.manager.close();

  const restarted = await open({ diskDirectory: directory });
  assert.deepEqual(
    restarted.events
      .filter((e) => e.type === "kv-block-stored")
      .flatMap((e) => (e.type === "kv-block-stored" ? [e.storageTier, e.blocks.length] : [])),
    ["disk", 4],
  );
  const back = await restarted.manager.onboard(hashes, 4, 0);
  assert.deepEqual(back?.byTier, { host: 0, disk: 4, object: 0 });
  assert.deepEqual(
    back?.records.map((r) => r.payload),
    [0, 1, 2, 3].map(payload),
  );
});

test("a corrupted disk block ends the prefix there: counted, removed, no error", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
  const { manager } = await open({ diskDirectory: directory, diskFrequencyFilter: false });
  await serve(manager);
  const folder = join(directory, hex(LAYOUT));
  assert.equal((await readdir(folder)).length, 4);
  // Overwrite block 2's payload (the header stays, so the scan would take it): the checksum fails.
  const path = join(folder, `${hex(hashes.sequence[2] as bigint)}.kvb`);
  const bytes = await readFile(path);
  bytes.writeUInt8((bytes.at(-1) ?? 0) ^ 0xff, bytes.length - 1);
  await writeFile(path, bytes);
  const meter = new PrometheusMeter();
  const reopened = await open({ diskDirectory: directory }, meter);
  const back = await reopened.manager.onboard(hashes, 4, 0);
  assert.equal(back?.records.length, 2);
  assert.equal(await metric(meter, 'armature_kvbm_checksum_failures_total{model="m",tier="disk"}'), 1);
  assert.equal((await readdir(folder)).length, 3, "the bad block is gone");
});

test("a truncated block file is dropped at the restart scan; a missing one is a read failure", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
  const { manager } = await open({ diskDirectory: directory, diskFrequencyFilter: false });
  await serve(manager);
  const folder = join(directory, hex(LAYOUT));
  const name = (i: number) => join(folder, `${hex(hashes.sequence[i] as bigint)}.kvb`);
  await truncate(name(3), 70);
  const reopened = await open({ diskDirectory: directory });
  await rm(name(1));
  const back = await reopened.manager.onboard(hashes, 4, 0);
  assert.equal(back?.records.length, 1);
  assert.equal(await metric(reopened.meter, 'armature_kvbm_read_failures_total{model="m",tier="disk"}'), 1);
});

test("a disk budget too small for a block stops offloading there, not serving", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
  const { manager } = await open({ hostBytes: 1024, diskDirectory: directory, diskBytes: 50, diskFrequencyFilter: false });
  await serve(manager);
  assert.deepEqual(await readdir(join(directory, hex(LAYOUT))), []);
  assert.equal((await manager.onboard(hashes, 4, 0))?.byTier.host, 4);
});

test("a second worker onboards from the shared object tier what only the first one computed", async () => {
  const store = new MemoryObjectStore();
  const a = await open({ objectStore: store });
  await serve(a.manager);
  assert.ok(a.events.some((e) => e.type === "kv-block-stored" && e.storageTier === "external"));
  const b = await open({ objectStore: store, hostBytes: 1024 });
  const back = await b.manager.onboard(hashes, 4, 0);
  assert.deepEqual(back?.byTier, { host: 0, disk: 0, object: 4 });
  assert.deepEqual(b.manager.plan(hashes).needed, [], "onboarded blocks are kept on the host tier");
  // Writing again is a no-op on the store (conditional put), and the tier skips what it knows.
  const plan = b.manager.plan(hashes);
  assert.deepEqual(plan.needed, []);
});

test("an object store that is down costs recomputation, not requests", async () => {
  const down: ObjectStore = Object.assign(new MemoryObjectStore(), {
    get: async () => {
      throw Object.assign(new Error("connect ECONNREFUSED"), { code: "TRANSFER_FAILED" });
    },
    putIfAbsent: async () => {
      throw new Error("connect ECONNREFUSED");
    },
  });
  const { manager, meter } = await open({ objectStore: down });
  await serve(manager);
  assert.equal(await metric(meter, 'armature_kvbm_write_failures_total{model="m",tier="object"}'), 4);
  assert.equal(await manager.onboard(hashes, 4, 0), undefined);
  // The first block is asked alone and fails; nothing after it is asked.
  assert.equal(await metric(meter, 'armature_kvbm_read_failures_total{model="m",tier="object"}'), 1);
});

test("a lookup asks the object store for the first block it may lack before the rest: one request when the store lacks it", async () => {
  const store = new MemoryObjectStore();
  let gets = 0;
  const counting: ObjectStore = Object.assign(Object.create(store) as MemoryObjectStore, {
    get: (...args: Parameters<MemoryObjectStore["get"]>) => {
      gets++;
      return store.get(...args);
    },
  });
  const other = await open({ objectStore: counting });
  assert.equal(await other.manager.onboard(hashes, 4, 0), undefined);
  assert.equal(gets, 1, "the empty store was asked once");
  const writer = await open({ objectStore: store });
  await serve(writer.manager);
  gets = 0;
  assert.deepEqual((await other.manager.onboard(hashes, 4, 0))?.byTier, { host: 0, disk: 0, object: 4 });
  assert.equal(gets, 4, "the first block alone, then the other three together");
});

test("a tier the caller judges not worth reading is left alone: its blocks are recomputed", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
  const first = await open({ diskDirectory: directory, diskFrequencyFilter: false });
  await serve(first.manager);
  await first.manager.close();
  const restarted = await open({ diskDirectory: directory });
  assert.equal(await restarted.manager.onboard(hashes, 4, 0, (tier) => tier !== "disk"), undefined);
  assert.deepEqual((await restarted.manager.onboard(hashes, 4, 0, () => true))?.byTier, { host: 0, disk: 4, object: 0 });
});
