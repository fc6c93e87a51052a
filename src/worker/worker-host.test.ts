import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import {
  type GenerateRequest,
  type GenerateResponse,
  isArmatureError,
  type KvEventBatch,
  subjects,
  type WorkerLoad,
} from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { WorkerHost } from "./worker-host.js";

const request = (maxTokens: number, tokens = Array.from({ length: 130 }, (_, i) => i % 200)): GenerateRequest => ({
  type: "generate-request",
  requestId: "r1",
  model: "m",
  tokenIds: tokens,
  sampling: { temperature: 0 },
  maxTokens,
});

async function setup() {
  const runtime = createEmbeddedRuntime();
  const engine = new MockerEngine({ speedupRatio: 200 });
  const worker = await WorkerHost.create({ runtime, engine, id: "w1", modelName: "m", logger: silentLogger, loadIntervalMs: 20 });
  return { runtime, engine, worker };
}

test("registers with a model card built from the engine", async () => {
  const { runtime, worker } = await setup();
  const [instance] = await runtime.discovery.list();
  assert.equal(instance?.id, "w1");
  assert.deepEqual(
    [
      instance?.card.name,
      instance?.card.role,
      instance?.card.blockSize,
      instance?.card.totalKvBlocks,
      instance?.card.maxBatchedTokens,
    ],
    ["m", "aggregated", 64, 16384, 8192],
  );
  await worker.close();
  await runtime.close();
  assert.deepEqual(await runtime.discovery.list(), [], "deregistered on close");
});

test("streams token deltas and publishes numbered KV events and load", async () => {
  const { runtime, worker } = await setup();
  const batches: KvEventBatch[] = [];
  const loads: WorkerLoad[] = [];
  runtime.events.subscribe(subjects.kvEvents("w1"), (p) => batches.push(p as KvEventBatch));
  runtime.events.subscribe(subjects.load("w1"), (p) => loads.push(p as WorkerLoad));
  const items: GenerateResponse[] = [];
  for await (const item of runtime.requests.call("w1", request(4))) items.push(item as GenerateResponse);
  const tokens = items.flatMap((i) => (i.type === "token-delta" ? i.tokenIds : []));
  assert.equal(tokens.length, 4);
  assert.equal(items.at(-1)?.type, "request-end");
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(batches.length >= 2, "130 tokens = 2 full blocks of 64");
  assert.deepEqual(
    batches.map((b) => b.eventId),
    batches.map((_, i) => i + 1),
  );
  assert.ok(loads.length > 0 && loads.every((l) => l.workerId === "w1" && l.totalKvBlocks === 16384));
  await worker.close();
  await runtime.close();
});

test("a caller that cancels stops the generation on the worker", async () => {
  const { runtime, engine, worker } = await setup();
  const controller = new AbortController();
  let received = 0;
  await assert.rejects(async () => {
    for await (const item of runtime.requests.call("w1", request(100_000), { signal: controller.signal })) {
      if ((item as GenerateResponse).type === "token-delta" && ++received === 2) controller.abort(new Error("client went away"));
    }
  }, /client went away/);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual([engine.load().activeRequests, engine.load().activeKvBlocks], [0, 0]);
  await worker.close();
  await runtime.close();
});

test("closing drains in-flight requests and refuses new ones", async () => {
  const { runtime, worker } = await setup();
  const items: GenerateResponse[] = [];
  const inflight = (async () => {
    for await (const item of runtime.requests.call("w1", request(30))) items.push(item as GenerateResponse);
  })();
  await new Promise((r) => setTimeout(r, 10));
  const closing = worker.close(5000);
  await assert.rejects(
    async () => {
      for await (const _ of runtime.requests.call("w1", request(1))) {
        /* drain */
      }
    },
    (e: unknown) => isArmatureError(e) && e.retryable && ["WORKER_UNAVAILABLE", "WORKER_DRAINING"].includes(e.code),
  );
  await inflight;
  await closing;
  const end = items.at(-1);
  assert.equal(end?.type === "request-end" && end.finishReason, "length");
  assert.equal(worker.state, "stopped");
  await runtime.close();
});
