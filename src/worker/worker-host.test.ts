import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import {
  type GenerateRequest,
  type GenerateResponse,
  isArmatureError,
  type KvEventBatch,
  type RequestEnd,
  subjects,
  type WorkerLoad,
} from "../protocol/index.js";
import { createEmbeddedRuntime, VirtualClock } from "../runtime/index.js";
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

test("draining waits on the runtime's clock for the requests in flight and leaves the engine running", async () => {
  const clock = new VirtualClock();
  const runtime = createEmbeddedRuntime({ clock });
  const engine = new MockerEngine({ clock });
  const worker = await WorkerHost.create({ runtime, engine, id: "w1", modelName: "m", logger: silentLogger });
  const items: GenerateResponse[] = [];
  const inflight = (async () => {
    for await (const item of runtime.requests.call("w1", request(30))) items.push(item as GenerateResponse);
  })();
  await clock.advance(1);
  let drained = false;
  const draining = worker.drain(60_000).then(() => {
    drained = true;
  });
  await clock.advance(0);
  assert.equal(worker.state, "draining");
  assert.deepEqual(await runtime.discovery.list(), [], "it left discovery at once");
  while (!drained) await clock.advance(10);
  await inflight;
  await draining;
  assert.ok(clock.now() < 60_000, `drained when its request ended (${clock.now()} ms), not at the grace`);
  assert.equal(items.at(-1)?.type, "request-end");
  assert.equal(engine.load().activeRequests, 0);
  const closing = worker.close();
  await clock.runUntilIdle(0);
  await closing;
  assert.equal(worker.state, "stopped");
  await runtime.close();
});

test("a request's deadline holds on the worker even when no cancellation arrives", async () => {
  const runtime = createEmbeddedRuntime();
  // At its modelled speed the mocker needs seconds for 5000 tokens; the deadline is 150 ms.
  const worker = await WorkerHost.create({ runtime, engine: new MockerEngine(), id: "w1", modelName: "m", logger: silentLogger });
  let tokens = 0;
  let end: RequestEnd | undefined;
  try {
    for await (const item of runtime.requests.call("w1", { ...request(5000), timeoutMs: 150 })) {
      const response = item as GenerateResponse;
      if (response.type === "token-delta") tokens += response.tokenIds.length;
      else end = response;
    }
  } catch (error) {
    assert.equal(isArmatureError(error) && error.code, "REQUEST_TIMEOUT");
  }
  assert.ok(end === undefined || end.finishReason === "cancelled", `ended as ${JSON.stringify(end)}`);
  assert.ok(tokens < 5000, `stopped early (${tokens} tokens)`);
  await worker.close(100);
  await runtime.close();
});

test("delivered into a sink in one process, the worker's deadline ends the call under the caller's never-aborted signal", async () => {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({ runtime, engine: new MockerEngine(), id: "w1", modelName: "m", logger: silentLogger });
  const caller = new AbortController();
  let tokens = 0;
  let end: RequestEnd | undefined;
  const finished = new Promise<unknown>((resolve) => {
    runtime.requests.open(
      "w1",
      { ...request(5000), timeoutMs: 150 },
      {
        push: (item) => {
          const response = item as GenerateResponse;
          if (response.type === "token-delta") tokens += response.tokenIds.length;
          else end = response;
        },
        end: () => resolve(undefined),
        fail: (error) => resolve(error),
      },
      { signal: caller.signal },
    );
  });
  const failure = await finished;
  if (failure !== undefined) assert.equal(isArmatureError(failure) && failure.code, "REQUEST_TIMEOUT", String(failure));
  else assert.equal(end?.finishReason, "cancelled", `ended as ${JSON.stringify(end)}`);
  assert.ok(tokens < 5000, `stopped early (${tokens} tokens)`);
  assert.equal(caller.signal.aborted, false, "the caller's own signal is left alone");
  await worker.close(100);
  await runtime.close();
});

test("a malformed generate request is refused naming the field, and counted", async () => {
  const { runtime, worker } = await setup();
  await assert.rejects(
    async () => {
      for await (const _ of runtime.requests.call("w1", { ...request(5), tokenIds: [1, "two"] })) {
        /* drain */
      }
    },
    (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID" && /tokenIds\[1\] must be an integer/.test(e.message),
  );
  assert.equal(runtime.invalidMessages.counts.get("generate-request"), 1);
  await worker.close(100);
  await runtime.close();
});
