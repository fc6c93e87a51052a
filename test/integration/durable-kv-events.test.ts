import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { MockerEngine } from "../../src/engines/index.js";
import { silentLogger } from "../../src/observability/index.js";
import { type GenerateRequest, hashBlocks } from "../../src/protocol/index.js";
import { KvIndexer } from "../../src/router/index.js";
import { connectDistributedRuntime, type Runtime } from "../../src/runtime/index.js";
import { WorkerHost } from "../../src/worker/index.js";
import { type ClusterServers, startClusterServers } from "../helpers/cluster-servers.js";
import { startNatsServer } from "../helpers/nats-server.js";

// --durable-kv-events: workers' KV events are kept in a JetStream stream, and a router that starts
// after them rebuilds its index from the stream, asking no worker.
let servers: ClusterServers;
let store: string;
before(async () => {
  store = await mkdtemp(join(tmpdir(), "armature-js-"));
  servers = await startClusterServers({ jetStreamDir: store });
});
after(async () => {
  await servers.stop();
  await rm(store, { recursive: true, force: true });
});

const connect = (durableKvEvents: boolean): Promise<Runtime> =>
  connectDistributedRuntime({ bus: servers.nats.url, discovery: `etcd://${servers.etcd.endpoint}`, durableKvEvents });

const prompt = (seed: number): number[] => Array.from({ length: 16 * 6 + 3 }, (_, i) => (seed * 31 + i) % 250);
const request = (seed: number): GenerateRequest => ({
  type: "generate-request",
  requestId: `r${seed}`,
  model: "m",
  tokenIds: prompt(seed),
  sampling: { temperature: 0 },
  maxTokens: 2,
});

async function serve(runtime: Runtime, workerId: string, seed: number): Promise<void> {
  for await (const _ of runtime.requests.call(workerId, request(seed))) {
    // drain
  }
}

test("a router that starts late rebuilds its index from the kept KV events without asking workers", async () => {
  const workerRuntime = await connect(true);
  const engine = () => new MockerEngine({ speedupRatio: 100, blockSize: 16 });
  const live = await WorkerHost.create({ runtime: workerRuntime, engine: engine(), modelName: "m", logger: silentLogger });
  const gone = await WorkerHost.create({ runtime: workerRuntime, engine: engine(), modelName: "m", logger: silentLogger });
  for (const seed of [1, 2, 3]) await serve(workerRuntime, live.id, seed);
  await serve(workerRuntime, gone.id, 4);
  await gone.close(0);
  await new Promise((r) => setTimeout(r, 500)); // the last events reach the stream

  const routerRuntime = await connect(true);
  let asked = 0;
  const indexer = new KvIndexer({
    runtime: routerRuntime,
    logger: silentLogger,
    blockSize: 16,
    recover: (workerId) => {
      asked++;
      throw new Error(`worker ${workerId} was asked for its events`);
    },
  });
  try {
    await indexer.ready;
    for (const seed of [1, 2, 3]) {
      const scores = indexer.findMatches(hashBlocks(prompt(seed), 16).local).scores;
      assert.equal(scores.get(live.id), 6, `prompt ${seed}: its 6 full blocks are on the live worker`);
    }
    assert.equal(
      indexer.findMatches(hashBlocks(prompt(4), 16).local).scores.size,
      0,
      "a worker gone before the router started is dropped",
    );
    assert.equal(asked, 0, "no worker was asked for its events");

    // Live events keep coming after the rebuild, in order.
    await serve(workerRuntime, live.id, 5);
    for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
      if (indexer.findMatches(hashBlocks(prompt(5), 16).local).scores.get(live.id) === 6) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(indexer.findMatches(hashBlocks(prompt(5), 16).local).scores.get(live.id), 6);
    assert.equal(asked, 0);
  } finally {
    indexer.close();
    await live.close(0);
    await routerRuntime.close();
    await workerRuntime.close();
  }
});

test("without JetStream on the server, --durable-kv-events says how to turn it on", async () => {
  const plain = await startNatsServer();
  try {
    await assert.rejects(
      connectDistributedRuntime({ bus: plain.url, discovery: `etcd://${servers.etcd.endpoint}`, durableKvEvents: true }),
      (error: Error) => /nats-server with -js/.test(error.message),
    );
  } finally {
    await plain.stop();
  }
});
