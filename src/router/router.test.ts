import assert from "node:assert/strict";
import { test } from "node:test";
import { MockerEngine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest, ModelCard } from "../protocol/index.js";
import { createEmbeddedRuntime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import { leastLoadedPolicy, randomPolicy, roundRobinPolicy } from "./basic-policies.js";
import { Router } from "./router.js";
import type { WorkerView } from "./worker-view.js";

const card = { name: "m" } as ModelCard;
const view = (id: string, inflight = 0, kv = 0): WorkerView => ({
  id,
  card,
  inflight,
  published: { type: "worker-load", workerId: id, activeRequests: 0, waitingRequests: 0, activeKvBlocks: kv, totalKvBlocks: 100 },
});
const req = { model: "m", tokenIds: [1, 2, 3] };

test("round-robin visits every worker in turn", () => {
  const policy = roundRobinPolicy();
  const workers = [view("b"), view("a"), view("c")];
  assert.deepEqual(
    Array.from({ length: 6 }, () => policy.select(workers, req).id),
    ["a", "b", "c", "a", "b", "c"],
  );
});

test("random follows its random source", () => {
  const values = [0.1, 0.5, 0.9];
  const policy = randomPolicy(() => values.shift() ?? 0);
  const workers = [view("a"), view("b"), view("c")];
  assert.deepEqual(
    [0, 1, 2].map(() => policy.select(workers, req).id),
    ["a", "b", "c"],
  );
});

test("least-loaded prefers fewer in-flight requests, then lower KV usage", () => {
  const policy = leastLoadedPolicy();
  assert.equal(policy.select([view("a", 2), view("b", 1), view("c", 3)], req).id, "b");
  assert.equal(policy.select([view("a", 1, 50), view("b", 1, 10)], req).id, "b");
  assert.equal(policy.select([view("b", 0, 0), view("a", 0, 0)], req).id, "a");
});

function generateRequest(model = "m"): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model,
    tokenIds: [1, 2, 3, 4, 5],
    sampling: { temperature: 0 },
    maxTokens: 3,
  };
}

test("the router reaches workers through discovery and the request plane, pinning honoured", async () => {
  const runtime = createEmbeddedRuntime();
  const workers = await Promise.all(
    ["w1", "w2"].map((id) =>
      WorkerHost.create({ runtime, id, engine: new MockerEngine({ speedupRatio: 1000 }), modelName: "m", logger: silentLogger }),
    ),
  );
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  try {
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const call = await router.route(generateRequest(), { signal: new AbortController().signal });
      for await (const _ of call.stream) {
        /* drain */
      }
      served.push(call.workerId);
    }
    assert.deepEqual(served, ["w1", "w2", "w1", "w2"]);
    const pinned = await router.route(generateRequest(), { signal: new AbortController().signal, pinnedWorkerId: "w2" });
    assert.equal(pinned.workerId, "w2");
    for await (const _ of pinned.stream) {
      /* drain */
    }
    assert.equal(router.workers.get("w2")?.inflight, 0, "in-flight count released when the stream ends");
    await assert.rejects(router.route(generateRequest(), { signal: new AbortController().signal, pinnedWorkerId: "nope" }), {
      code: "ROUTER_WORKER_NOT_FOUND",
    });
    await assert.rejects(router.route(generateRequest("other"), { signal: new AbortController().signal }), {
      code: "ROUTER_NO_WORKER",
    });
  } finally {
    router.close();
    await Promise.all(workers.map((w) => w.close(1000)));
    await runtime.close();
  }
});

// Regression: a restructured route() awaited between a request's admission and its booking, so
// requests that arrived together all chose on a load without each other's bookings (a whole
// conversation-trace replay's hit rate fell from 34% to 29% and its mean TTFT tripled).
test("requests routed at the same instant see each other's bookings", async () => {
  const runtime = createEmbeddedRuntime();
  const workers = await Promise.all(
    ["w1", "w2", "w3"].map((id) =>
      WorkerHost.create({ runtime, id, engine: new MockerEngine({ speedupRatio: 1000 }), modelName: "m", logger: silentLogger }),
    ),
  );
  const router = new Router({ runtime, policy: leastLoadedPolicy(), logger: silentLogger });
  try {
    const signal = new AbortController().signal;
    const calls = await Promise.all([1, 2, 3].map((i) => router.route({ ...generateRequest(), requestId: `r${i}` }, { signal })));
    assert.deepEqual(
      calls.map((c) => c.workerId).sort(),
      ["w1", "w2", "w3"],
      "least-loaded spreads three requests over three idle workers",
    );
    await Promise.all(
      calls.map(async (call) => {
        for await (const _ of call.stream) {
          /* drain */
        }
      }),
    );
  } finally {
    router.close();
    await Promise.all(workers.map((w) => w.close(100)));
    await runtime.close();
  }
});

test("a worker that leaves discovery stops receiving requests", async () => {
  const runtime = createEmbeddedRuntime();
  const w1 = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
  const w2 = await WorkerHost.create({
    runtime,
    id: "w2",
    engine: new MockerEngine({ speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  await w1.close(100);
  const ids = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const call = await router.route(generateRequest(), { signal: new AbortController().signal });
    for await (const _ of call.stream) {
      /* drain */
    }
    ids.add(call.workerId);
  }
  assert.deepEqual([...ids], ["w2"]);
  router.close();
  await w2.close(100);
  await runtime.close();
});

test("a malformed response from a worker fails the call retryably, is counted, and cancels the worker's stream", async () => {
  const runtime = createEmbeddedRuntime();
  const real = await WorkerHost.create({ runtime, id: "w1", engine: new MockerEngine(), modelName: "m", logger: silentLogger });
  await real.close(0);
  // A worker that registers like a real one but answers with garbage after one good token.
  let cancelled = false;
  await runtime.requests.serve("bad", async function* () {
    try {
      yield { type: "token-delta", tokenIds: [1] };
      yield { type: "token-delta", tokenIds: "not a list" };
      yield { type: "token-delta", tokenIds: [2] };
    } finally {
      cancelled = true;
    }
  });
  const badCard: ModelCard = { ...real.card, name: "m", role: "aggregated" };
  await runtime.discovery.register({ id: "bad", role: "aggregated", model: "m", card: badCard }, { ttlMs: 10_000 });
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  await new Promise((r) => setImmediate(r));
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: "r",
    model: "m",
    tokenIds: [1, 2, 3],
    sampling: { temperature: 0 },
    maxTokens: 3,
  };
  const call = await router.route(request, { signal: new AbortController().signal });
  const seen: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const item of call.stream) seen.push(item);
    },
    (e: unknown) =>
      (e as { code?: string; retryable?: boolean }).code === "ENGINE_FAILED" && (e as { retryable: boolean }).retryable,
  );
  assert.deepEqual(seen, [{ type: "token-delta", tokenIds: [1] }]);
  assert.equal(runtime.invalidMessages.counts.get("generate-response"), 1);
  assert.equal(cancelled, true, "the worker's stream was closed");
  assert.equal(router.workers.get("bad")?.inflight, 0, "the call was released");
  router.close();
  await runtime.close();
});

test("a request parked behind embeddings runs when they end (regression: it waited for ever)", async () => {
  const runtime = createEmbeddedRuntime();
  const worker = await WorkerHost.create({
    runtime,
    id: "w1",
    engine: new MockerEngine({ speedupRatio: 1000 }),
    modelName: "m",
    logger: silentLogger,
  });
  // One request in flight makes the worker busy: the embedding below fills it.
  const router = new Router({
    runtime,
    policy: roundRobinPolicy(),
    logger: silentLogger,
    busy: { activeSequencesFrac: 1 / worker.card.maxSequences },
  });
  try {
    const embedding = router.embed(
      { type: "embed-request", requestId: "e", model: "m", inputs: [[1, 2, 3]] },
      { signal: new AbortController().signal },
    );
    assert.equal(router.workers.get("w1")?.inflight, 1);
    const routed = router.route(generateRequest(), { signal: new AbortController().signal });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(router.queuedRequests, 1, "parked while the embedding runs");
    // The mocker computes no embeddings: the call ends in an error, and the worker's slot is free.
    await assert.rejects(async () => {
      for await (const _ of embedding.stream) {
        /* drain */
      }
    });
    const call = await Promise.race([
      routed,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the parked request never ran")), 5000)),
    ]);
    for await (const _ of call.stream) {
      /* drain */
    }
    assert.equal(call.workerId, "w1");
  } finally {
    router.close();
    await worker.close(100);
    await runtime.close();
  }
});
