import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../../engines/index.js";
import { silentLogger } from "../../observability/index.js";
import { hashBlocks } from "../../protocol/index.js";
import { createEmbeddedRuntime } from "../../runtime/index.js";
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
  await new Promise((r) => setTimeout(r, 20));
}

test("a mocker worker's events make the index find its cached prefix; leaving discovery drops it", async () => {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 16, speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
  await drive(runtime, "w1", tokens);
  const query = hashBlocks(tokens, 16).local;
  assert.equal(indexer.findMatches(query).scores.get("w1"), 12, "199 computed prompt tokens = 12 full blocks");
  assert.equal(indexer.applied.get("kv-block-stored:ok"), 12);
  await worker.close(100);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(indexer.findMatches(query).scores.size, 0);
  indexer.close();
  await runtime.close();
});

test("a worker with another block size is ignored and counted", async () => {
  const runtime = createEmbeddedRuntime();
  const indexer = new KvIndexer({ runtime, logger: silentLogger, blockSize: 16 });
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 32, speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
  await drive(runtime, "w1", tokens);
  assert.equal(indexer.findMatches(hashBlocks(tokens, 16).local).scores.size, 0);
  assert.ok((indexer.applied.get("kv-block-stored:block_size_mismatch") ?? 0) > 0);
  await worker.close(100);
  indexer.close();
  await runtime.close();
});
