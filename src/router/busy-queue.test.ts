import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import { type GenerateRequest, subjects } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import { roundRobinPolicy } from "./basic-policies.js";
import { PrefillStage } from "./prefill-stage.js";
import { Router } from "./router.js";

const request = (maxTokens: number): GenerateRequest => ({
  type: "generate-request",
  requestId: "r",
  model: "m",
  tokenIds: Array.from({ length: 12 }, (_, i) => i),
  sampling: { temperature: 0 },
  maxTokens,
});

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    /* drain */
  }
}

async function setup(queueSize: number) {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 16 }),
    modelName: "m",
    logger: silentLogger,
  });
  // A 12-token request books 3 of the worker's 16 blocks, over the 10% threshold: one request makes it busy.
  const router = new Router({
    runtime,
    policy: roundRobinPolicy(),
    logger: silentLogger,
    busy: { activeDecodeBlocks: 0.1, queueSize },
  });
  return {
    router,
    runtime,
    async close() {
      router.close();
      await worker.close(1000);
      await runtime.close();
    },
  };
}

test("while every worker is busy requests wait in order, and a full queue answers ROUTER_OVERLOADED", async () => {
  const { router, close } = await setup(1);
  try {
    const first = await router.route(request(20), { signal: new AbortController().signal });
    const order: string[] = [];
    const second = router.route(request(1), { signal: new AbortController().signal }).then(async (call) => {
      order.push("second routed");
      await drain(call.stream);
    });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(router.queuedRequests, 1);
    await assert.rejects(router.route(request(1), { signal: new AbortController().signal }), { code: "ROUTER_OVERLOADED" });
    assert.deepEqual(order, [], "the second waits while the first runs");
    // The first's slot is freed as its stream ends at the worker, so the second may be routed
    // before the last of the first's stream is read here.
    await drain(first.stream);
    await second;
    assert.deepEqual(order, ["second routed"]);
    assert.equal(router.queuedRequests, 0);
  } finally {
    await close();
  }
});

test("a request that gives up while queued leaves the queue", async () => {
  const { router, close } = await setup(4);
  try {
    const first = await router.route(request(20), { signal: new AbortController().signal });
    const controller = new AbortController();
    const waiting = router.route(request(1), { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 5));
    controller.abort(new Error("client left"));
    await assert.rejects(waiting, /client left/);
    assert.equal(router.queuedRequests, 0);
    await drain(first.stream);
  } finally {
    await close();
  }
});

test("requests for a model whose workers are busy never hold back another model's", async () => {
  // Regression: one admission queue per router parked model B's requests behind model A's.
  const { router, runtime, close } = await setup(8);
  const other = await WorkerHost.create({
    runtime,
    id: "w2",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 16 }),
    modelName: "other",
    logger: silentLogger,
  });
  try {
    const first = await router.route(request(20), { signal: new AbortController().signal });
    const waiting = router.route(request(1), { signal: new AbortController().signal });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(router.queuedRequests, 1, "model m's second request waits");
    const call = await router.route({ ...request(1), model: "other" }, { signal: new AbortController().signal });
    assert.equal(call.workerId, "w2");
    await drain(call.stream);
    await drain(first.stream);
    await drain((await waiting).stream);
  } finally {
    await other.close(1000);
    await close();
  }
});

test("with disaggregation, decode capacity is taken before the prefill runs: a full queue leaves no export behind", async () => {
  // Regression: prefill ran first, so a 503 from decode admission stranded the KV export until its TTL.
  const { router: plainRouter, runtime, close } = await setup(0);
  plainRouter.close();
  const prefillWorker = await WorkerHost.create({
    runtime,
    id: "p1",
    role: "prefill",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 16 }),
    modelName: "m",
    logger: silentLogger,
  });
  const prefillRouter = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger, roles: ["prefill"] });
  const router = new Router({
    runtime,
    policy: roundRobinPolicy(),
    logger: silentLogger,
    busy: { activeDecodeBlocks: 0.1, queueSize: 0 },
    prefill: new PrefillStage({ router: prefillRouter }),
  });
  try {
    const first = await router.route(request(20), { signal: new AbortController().signal });
    assert.equal(first.prefillWorkerId, "p1", "the first request was split");
    await drain(first.stream);
    const busy = await router.route(request(20), { signal: new AbortController().signal });
    const handoffsBefore = prefillWorker.heldHandoffs;
    await assert.rejects(router.route(request(1), { signal: new AbortController().signal }), { code: "ROUTER_OVERLOADED" });
    assert.equal(prefillWorker.heldHandoffs, handoffsBefore, "no prefill ran for the refused request");
    await drain(busy.stream);
  } finally {
    router.close();
    prefillRouter.close();
    await prefillWorker.close(1000);
    await close();
  }
});

test("a request parked behind a worker's published load goes once a lower load report arrives", async () => {
  // Regression: only bookings woke the queue, so a worker that stayed busy by its published load
  // after its bookings ended left parked requests waiting for ever once traffic stopped.
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 16 }),
    modelName: "m",
    logger: silentLogger,
    loadIntervalMs: 60_000,
  });
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger, busy: { activeDecodeBlocks: 0.1 } });
  const report = (activeKvBlocks: number) =>
    runtime.events.publish(subjects.load("w1"), {
      type: "worker-load",
      workerId: "w1",
      activeRequests: 0,
      waitingRequests: 0,
      activeKvBlocks,
      totalKvBlocks: 16,
    });
  try {
    await report(12);
    await new Promise((r) => setTimeout(r, 5));
    const routed = router.route(request(1), { signal: new AbortController().signal });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(router.queuedRequests, 1, "the worker's published load makes it busy");
    await report(0);
    const outcome = await Promise.race([
      routed.then(() => "routed"),
      new Promise((r) => setTimeout(() => r("still parked"), 1000)),
    ]);
    assert.equal(outcome, "routed");
    await drain((await routed).stream);
  } finally {
    router.close();
    await worker.close(1000);
    await runtime.close();
  }
});

test("requests admitted at the same instant do not fail when the first takes the last free worker", async () => {
  // Regression: both passed admission before either booked; the second then found no idle worker
  // and failed with ROUTER_NO_WORKER instead of waiting (a disaggregated request fell back to a
  // local prefill for it).
  const { router, close } = await setup(4);
  try {
    const first = router.route(request(20), { signal: new AbortController().signal });
    const second = router.route(request(1), { signal: new AbortController().signal });
    await drain((await first).stream);
    await drain((await second).stream);
    assert.equal(router.queuedRequests, 0);
  } finally {
    await close();
  }
});

test("a worker running as many requests as its sequences is busy: later requests wait at the router, by priority", async () => {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 1024, maxSequences: 1 }),
    modelName: "m",
    logger: silentLogger,
  });
  const shed: string[] = [];
  // Default thresholds: 3 of 1024 blocks is far from busy by KV; only the one sequence is taken.
  const router = new Router({
    runtime,
    policy: roundRobinPolicy(),
    logger: silentLogger,
    busy: { queueSize: 2 },
    onShed: (model, reason, priority) => shed.push(`${model} ${reason} ${priority}`),
  });
  try {
    const first = await router.route(request(20), { signal: new AbortController().signal });
    const order: string[] = [];
    const queued = (name: string, priority: number) =>
      router.route({ ...request(1), requestId: name, priority }, { signal: new AbortController().signal }).then(
        async (call) => {
          order.push(name);
          await drain(call.stream);
        },
        (error: { code: string }) => order.push(`${name} ${error.code}`),
      );
    const batch = queued("batch", 10);
    const low = queued("low", 5);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(router.queuedRequests, 2, "the worker's one sequence is taken: both wait");
    const high = queued("high", 0);
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(order, ["batch ROUTER_OVERLOADED"], "the full queue gave the batch request's place to the urgent one");
    await drain(first.stream);
    await Promise.all([batch, low, high]);
    assert.deepEqual(order, ["batch ROUTER_OVERLOADED", "high", "low"]);
    assert.deepEqual(shed, ["m displaced 10"]);
  } finally {
    router.close();
    await worker.close(1000);
    await runtime.close();
  }
});

test("with a priority reserve, deferred requests leave sequences free that an urgent request then takes at once", async () => {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ blockSize: 4, kvBlocks: 1024, maxSequences: 4 }),
    modelName: "m",
    logger: silentLogger,
  });
  // Half of the 4 sequences are kept for priority 0 and below: deferred requests may run 2.
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger, busy: { priorityReserve: 0.5 } });
  const signal = new AbortController().signal;
  try {
    const deferred = [
      await router.route({ ...request(20), requestId: "d1", priority: 5 }, { signal }),
      await router.route({ ...request(20), requestId: "d2", priority: 5 }, { signal }),
    ];
    let thirdRouted = false;
    const third = router.route({ ...request(1), requestId: "d3", priority: 5 }, { signal }).then((call) => {
      thirdRouted = true;
      return call;
    });
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(router.queuedRequests, 1, "the third deferred request waits: 2 of 4 sequences are reserved");
    const urgent = await router.route({ ...request(1), requestId: "u1", priority: 0 }, { signal });
    assert.equal(thirdRouted, false, "the urgent request went ahead of the waiting deferred one");
    await drain(urgent.stream);
    for (const call of deferred) await drain(call.stream);
    await drain((await third).stream);
  } finally {
    router.close();
    await worker.close(1000);
    await runtime.close();
  }
});
