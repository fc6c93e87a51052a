import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../../engines/index.js";
import { silentLogger } from "../../observability/index.js";
import { hashBlocks, type KvEventBatch, subjects } from "../../protocol/index.js";
import { waitFor } from "../../runtime/contracts/wait-for.js";
import { createEmbeddedRuntime, VirtualClock } from "../../runtime/index.js";
import { WorkerHost } from "../../worker/index.js";
import { KvIndexer } from "./kv-indexer.js";

const tokens = Array.from({ length: 200 }, (_, i) => (i * 7) % 251);

async function drive(runtime: ReturnType<typeof createEmbeddedRuntime>, workerId: string, tokenIds: number[]) {
  for await (const _ of runtime.requests.call(workerId, {
    type: "generate-request",
    requestId: "r",
    model: "m",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens: 1,
  })) {
    /* drain */
  }
}

/** Worker `w1` on a mocker with 16-token blocks. */
function mockerWorker(runtime: ReturnType<typeof createEmbeddedRuntime>): Promise<WorkerHost> {
  return WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 16, speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
}

test("a mocker worker's events make the index find its cached prefix; leaving discovery drops it", async () => {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const worker = await mockerWorker(runtime);
  try {
    await drive(runtime, "w1", tokens);
    const query = hashBlocks(tokens, 16).local;
    await waitFor(() => indexer.findMatches(query).scores.has("w1"));
    assert.equal(indexer.findMatches(query).scores.get("w1"), 12, "199 computed prompt tokens = 12 full blocks");
    assert.equal(indexer.applied.get("kv-block-stored:ok"), 12);
    await worker.close(100);
    await waitFor(() => indexer.findMatches(query).scores.size === 0);
  } finally {
    await worker.close(100);
    indexer.close();
    await runtime.close();
  }
});

test("each model is indexed at its workers' block size; a worker of the model at another size is ignored and counted", async () => {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const worker = (id: string, modelName: string, blockSize: number) =>
    WorkerHost.create({
      runtime,
      id,
      engine: new MockerEngine({ blockSize, speedupRatio: 1000 }),
      modelName,
      logger: silentLogger,
    });
  const workers = [await worker("w1", "m", 16), await worker("w2", "m", 32), await worker("w3", "n", 32)];
  try {
    await waitFor(() => indexer.blockSizeOf("n") !== undefined);
    assert.deepEqual([indexer.blockSizeOf("m"), indexer.blockSizeOf("n"), indexer.blockSizeOf("x")], [16, 32, undefined]);
    await drive(runtime, "w3", tokens);
    await waitFor(() => indexer.findMatches(hashBlocks(tokens, 32).local).scores.has("w3"));
    assert.equal(indexer.findMatches(hashBlocks(tokens, 32).local).scores.get("w3"), 6, "199 computed tokens = 6 blocks of 32");
    await drive(runtime, "w2", tokens);
    await waitFor(() => (indexer.applied.get("kv-block-stored:block_size_mismatch") ?? 0) > 0);
    assert.equal(indexer.findMatches(hashBlocks(tokens, 32).local).scores.has("w2"), false, "m hashes with 16, w2 stores 32");
    // The model's last worker gone, it may come back at another size.
    await (workers[0] as WorkerHost).close(100);
    await (workers[1] as WorkerHost).close(100);
    await waitFor(() => indexer.blockSizeOf("m") === undefined);
    workers.push(await worker("w4", "m", 64));
    await waitFor(() => indexer.blockSizeOf("m") !== undefined);
    assert.equal(indexer.blockSizeOf("m"), 64);
  } finally {
    await Promise.all(workers.map((w) => w.close(100)));
    indexer.close();
    await runtime.close();
  }
});

async function lossyIndexer(recentEvents: number, dropEventIds: number[]) {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({
    logger: silentLogger,
    blockSize: 16,
    recover: (workerId, fromEventId) =>
      runtime.requests.call(subjects.kvQuery(workerId), { type: "kv-events-query", fromEventId }) as AsyncIterable<KvEventBatch>,
  });
  runtime.events.subscribe(subjects.allKvEvents, (payload) => {
    const batch = payload as KvEventBatch;
    if (!dropEventIds.includes(batch.eventId)) indexer.apply(batch);
  });
  const engine = new MockerEngine({ blockSize: 16, speedupRatio: 1000 });
  const worker = await WorkerHost.create({ runtime, id: "w1", engine, modelName: "m", logger: silentLogger, recentEvents });
  const next = tokens.map((t) => t + 1);
  return {
    indexer,
    engine,
    /** Two prompts through the worker, until the index holds the second (whatever it had to recover). */
    async driveTwoPrompts() {
      await drive(runtime, "w1", tokens);
      await drive(runtime, "w1", next);
      await waitFor(() => indexer.findMatches(hashBlocks(next, 16).local).scores.get("w1") === 12);
    },
    async close() {
      await worker.close(100);
      indexer.close();
      await runtime.close();
    },
  };
}

test("a lost batch is fetched again from the worker's ring buffer", async () => {
  const { indexer, driveTwoPrompts, close } = await lossyIndexer(1024, [2]);
  try {
    await driveTwoPrompts();
    assert.equal(indexer.recoveries.started, 1);
    assert.equal(indexer.findMatches(hashBlocks(tokens, 16).local).scores.get("w1"), 12, "the lost block is back");
  } finally {
    await close();
  }
});

test("when the ring buffer no longer has them, the worker's dump replaces what the index knew", async () => {
  const { indexer, engine, driveTwoPrompts, close } = await lossyIndexer(1, [3, 4, 5]);
  try {
    await driveTwoPrompts();
    assert.equal(indexer.recoveries.started, 1);
    assert.equal(indexer.tree.blockCount("w1"), engine.dumpKvEvents().length);
  } finally {
    await close();
  }
});

/** An indexer with a 30-s silence warning on a virtual clock, the warnings it logs, and a load publisher for w1. */
function silenceSetup() {
  const clock = new VirtualClock();
  const runtime = createEmbeddedRuntime({ clock });
  const warnings: { fields: Record<string, unknown>; message: string }[] = [];
  const logger = {
    ...silentLogger,
    child: () => logger,
    warn: (a: unknown, b?: string) => warnings.push({ fields: a as Record<string, unknown>, message: String(b) }),
  } as typeof silentLogger;
  const indexer = new KvIndexer({ runtime, logger, blockSize: 16, silenceWarningMs: 30_000 });
  /** A busy load report; `kvEventId` as a worker that says what it published sends it. */
  const load = (kvEventId?: number) =>
    runtime.events.publish(subjects.load("w1"), {
      type: "worker-load",
      workerId: "w1",
      activeRequests: 2,
      waitingRequests: 0,
      activeKvBlocks: 1,
      totalKvBlocks: 8,
      ...(kvEventId === undefined ? {} : { kvEventId }),
    });
  const batch = (eventId: number) =>
    runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId, events: [] });
  return { clock, runtime, indexer, warnings, load, batch };
}

test("a busy worker whose KV events stop arriving is reported once, loudly (a load that does not say what was published)", async () => {
  const { clock, runtime, indexer, warnings, load } = silenceSetup();
  await load();
  await clock.advance(20_000);
  await load();
  assert.equal(warnings.length, 0);
  await clock.advance(20_000);
  await load();
  await load();
  await clock.advance(1);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]?.message ?? "", /KV events stopped arriving/);
  indexer.close();
  await runtime.close();
});

test("a busy worker that published no KV events (its requests filled no block) is not reported", async () => {
  const { clock, runtime, indexer, warnings, load, batch } = silenceSetup();
  await load(0);
  for (let i = 0; i < 4; i++) {
    await clock.advance(20_000);
    await load(0);
  }
  await batch(1);
  for (let i = 0; i < 4; i++) {
    await clock.advance(20_000);
    await load(1);
  }
  assert.deepEqual(warnings, [], "everything the worker published was heard");
  indexer.close();
  await runtime.close();
});

test("a busy worker whose published KV events do not arrive is reported with what was published and heard", async () => {
  const { clock, runtime, indexer, warnings, load, batch } = silenceSetup();
  await batch(1);
  await load(1); // up to date at 0 s
  await clock.advance(20_000);
  await load(3); // batches 2 and 3 were published since; none arrives
  assert.equal(warnings.length, 0, "20 s since it was last up to date: not yet reported");
  await clock.advance(15_000);
  await load(3);
  assert.equal(warnings.length, 1, "35 s since it was last up to date");
  assert.match(warnings[0]?.message ?? "", /KV events stopped arriving/);
  assert.equal(warnings[0]?.fields.publishedEventId, 3);
  assert.equal(warnings[0]?.fields.appliedEventId, 1);
  indexer.close();
  await runtime.close();
});

test("lower-tier blocks are indexed apart from the device's, and leave with the worker", () => {
  const indexer = new KvIndexer({ logger: silentLogger, blockSize: 16 });
  const { local, sequence } = hashBlocks(tokens, 16);
  const blocks = (n: number) => local.slice(0, n).map((tokensHash, i) => ({ tokensHash, blockHash: sequence[i] as bigint }));
  const batch = (workerId: string, eventId: number, events: KvEventBatch["events"]): KvEventBatch => ({
    type: "kv-event-batch",
    workerId,
    eventId,
    events,
  });
  indexer.apply(batch("w1", 1, [{ type: "kv-block-stored", parentHash: null, blocks: blocks(3), blockSize: 16 }]));
  assert.equal(indexer.findMatches(local).lowerTierScores, undefined, "no tiers reported: matches as before");
  indexer.apply(
    batch("w1", 2, [
      { type: "kv-block-stored", parentHash: null, blocks: blocks(8), blockSize: 16, storageTier: "host_pinned" },
      { type: "kv-block-removed", blockHashes: [sequence[6] as bigint], storageTier: "host_pinned" },
      { type: "kv-block-removed", blockHashes: [sequence[2] as bigint] },
    ]),
  );
  let m = indexer.findMatches(local);
  assert.deepEqual([m.scores.get("w1"), m.lowerTierScores?.get("w1"), m.treeSizes.get("w1")], [2, 6, 2]);
  assert.equal(m.treeSizes.size, 1, "tree sizes name workers, not tiers");
  indexer.apply(batch("w1", 3, [{ type: "kv-cache-cleared" }]));
  m = indexer.findMatches(local);
  assert.deepEqual([m.scores.size, m.lowerTierScores?.size ?? 0], [0, 0], "a cleared worker holds nothing on any tier");
  indexer.apply(
    batch("w1", 4, [{ type: "kv-block-stored", parentHash: null, blocks: blocks(4), blockSize: 16, storageTier: "disk" }]),
  );
  assert.equal(indexer.findMatches(local).lowerTierScores?.get("w1"), 4);
  indexer.removeWorker("w1");
  assert.equal(indexer.tree.blockCount("w1\u0000disk"), 0, "leaving discovery drops every tier");
});

test("a malformed KV event batch after a gap is dropped and counted, and recovery does not crash the process", async () => {
  // Regression: a batch with an id gap and a non-array `events` was re-applied in recovery's
  // `finally`, whose rejection nobody awaited: one NATS message ended a frontend or router.
  const runtime = createEmbeddedRuntime();
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on("unhandledRejection", onRejection);
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const { local, sequence } = hashBlocks(tokens, 16);
  const stored = { type: "kv-block-stored", parentHash: null, blockSize: 16 } as const;
  const blocks = local.slice(0, 2).map((tokensHash, i) => ({ tokensHash, blockHash: sequence[i] as bigint }));
  await runtime.requests.serve(subjects.kvQuery("w1"), async function* () {
    yield { type: "kv-events-dump", workerId: "w1", eventId: 2, events: [{ ...stored, blocks }] };
  });
  try {
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId: 1, events: [] });
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId: 3, events: 42 });
    await runtime.events.publish(subjects.kvEvents("w1"), {
      type: "kv-event-batch",
      workerId: "w1",
      eventId: 2,
      events: [{ type: "kv-block-stored", parentHash: null, blocks: [{ blockHash: "x", tokensHash: 1n }], blockSize: 16 }],
    });
    // Another worker's id under this worker's subject is a forgery, not an event of either.
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w2", eventId: 1, events: [] });
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(rejections, []);
    assert.equal(runtime.invalidMessages.counts.get("kv-event-batch"), 3);
    assert.equal(indexer.recoveries.started, 0, "a dropped batch leaves no gap to recover");
    // A valid batch after the gap still recovers from the worker.
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId: 3, events: [] });
    await waitFor(() => indexer.findMatches(local).scores.has("w1"));
    assert.equal(indexer.recoveries.started, 1);
    assert.equal(indexer.findMatches(local).scores.get("w1"), 2, "the dump's blocks were applied");
    assert.deepEqual(rejections, []);
  } finally {
    process.off("unhandledRejection", onRejection);
    indexer.close();
    await runtime.close();
  }
});

test("a malformed recovery answer fails that recovery cleanly and is counted", async () => {
  const runtime = createEmbeddedRuntime();
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on("unhandledRejection", onRejection);
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  await runtime.requests.serve(subjects.kvQuery("w1"), async function* () {
    yield { type: "kv-events-dump", workerId: "w1", eventId: 5, events: { length: 1e9 } };
  });
  try {
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId: 4, events: [] });
    await waitFor(() => indexer.recoveries.failed > 0);
    assert.deepEqual(rejections, []);
    assert.deepEqual(indexer.recoveries, { started: 1, failed: 1 });
    assert.equal(runtime.invalidMessages.counts.get("kv-events-dump"), 1);
    // The held batch still applies: the next one in sequence is not treated as another gap.
    await runtime.events.publish(subjects.kvEvents("w1"), { type: "kv-event-batch", workerId: "w1", eventId: 5, events: [] });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(indexer.recoveries.started, 1);
  } finally {
    process.off("unhandledRejection", onRejection);
    indexer.close();
    await runtime.close();
  }
});

test("workers that leave give back their capacity: a fleet that restarts its workers does not grow the index", async () => {
  // Regression: each worker that joined added its KV capacity for good, so every restart (a new id)
  // grew the tables the index reserves; the chaos soak's router grew 12.6% in 10 minutes.
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const card = {
    name: "m",
    role: "aggregated",
    engine: "mocker",
    blockSize: 16,
    totalKvBlocks: 1000,
    maxBatchedTokens: 1,
    maxSequences: 1,
    contextLength: 16,
    tokenizer: { kind: "bytes" },
    eosTokenIds: [],
    publishesKvEvents: true,
  } as const;
  try {
    const stay = await runtime.discovery.register({ id: "w0", role: "aggregated", model: "m", card }, { ttlMs: 10_000 });
    for (let i = 1; i <= 20; i++) {
      const lease = await runtime.discovery.register({ id: `w${i}`, role: "aggregated", model: "m", card }, { ttlMs: 10_000 });
      await new Promise((r) => setImmediate(r));
      assert.equal(indexer.fleetCapacity, 2000, `while w${i} is up`);
      await lease.revoke();
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(indexer.fleetCapacity, 1000);
    await stay.revoke();
  } finally {
    indexer.close();
    await runtime.close();
  }
});

test("a worker that announced blocks before the index listened is asked for them when discovery shows it", async () => {
  // As after a restart: the worker's disk tier announced its blocks while the router was starting.
  const runtime = createEmbeddedRuntime();
  const worker = await mockerWorker(runtime);
  let indexer: KvIndexer | undefined;
  try {
    await drive(runtime, "w1", tokens);
    const index = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
    indexer = index;
    await waitFor(() => index.findMatches(hashBlocks(tokens, 16).local).scores.has("w1"));
    assert.equal(index.findMatches(hashBlocks(tokens, 16).local).scores.get("w1"), 12, "no later batch was needed");
    assert.equal(index.recoveries.started, 0, "a first catch-up is not a recovery of lost events");
    // Its next batch follows on from what the catch-up gave: applied, no gap, no recovery.
    const next = tokens.map((t) => t + 1);
    await drive(runtime, "w1", next);
    await waitFor(() => index.findMatches(hashBlocks(next, 16).local).scores.has("w1"));
    assert.equal(index.findMatches(hashBlocks(next, 16).local).scores.get("w1"), 12);
    assert.equal(index.recoveries.started, 0);
  } finally {
    indexer?.close();
    await worker.close(100);
    await runtime.close();
  }
});
