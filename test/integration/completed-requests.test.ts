import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { Engine, GenerateOptions } from "../../src/engines/engine.js";
import { MockerEngine } from "../../src/engines/index.js";
import { startGeneration } from "../../src/frontend/generation.js";
import { ModelPipelines } from "../../src/frontend/model-pipelines.js";
import { parseCommonParams } from "../../src/frontend/requests/common-params.js";
import { silentLogger } from "../../src/observability/index.js";
import type { GenerateRequest, GenerateResponse } from "../../src/protocol/index.js";
import { Router, roundRobinPolicy } from "../../src/router/index.js";
import { createEmbeddedRuntime, type Runtime } from "../../src/runtime/index.js";
import { NatsRequestPlane } from "../../src/runtime/nats/index.js";
import { WorkerHost } from "../../src/worker/index.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// A request that completes normally cancels nothing: its worker's signal is never aborted and, over
// NATS, no cancel message is published. Both go through the frontend's generation path
// (startGeneration: the router, migration, detokenizing), as every generating route does.

/** The mocker, noting for each generation whether its signal was aborted by the time it ended. */
class SignalWatchingEngine implements Engine {
  readonly #inner = new MockerEngine({ speedupRatio: 1000 });
  ended = 0;
  aborted = 0;
  get info() {
    return this.#inner.info;
  }
  async *generate(request: GenerateRequest, options: GenerateOptions): AsyncIterable<GenerateResponse> {
    try {
      yield* this.#inner.generate(request, options);
    } finally {
      this.ended++;
      if (options.signal.aborted) this.aborted++;
    }
  }
  onKvEvents(listener: Parameters<Engine["onKvEvents"]>[0]): () => void {
    return this.#inner.onKvEvents(listener);
  }
  load() {
    return this.#inner.load();
  }
  dumpKvEvents() {
    return this.#inner.dumpKvEvents();
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

/** Sends `count` requests (ten at a time) through startGeneration and reads each to its end. */
async function completeRequests(router: Router, count: number): Promise<string[]> {
  const pipeline = await new ModelPipelines(router.workers).get("m");
  const finishReasons: string[] = [];
  const one = async (i: number): Promise<void> => {
    const params = parseCommonParams({ model: "m", max_tokens: 1 + (i % 4), temperature: 0 }, ["max_tokens"]);
    const generation = await startGeneration(router, {
      pipeline,
      tokenIds: pipeline.tokenize(`request number ${i}`),
      params,
      signal: new AbortController().signal,
      observer: { onTokens: () => {} },
      migrationLimit: 3,
    });
    for await (const event of generation.events) if (event.type === "end") finishReasons.push(event.finishReason);
  };
  for (let start = 0; start < count; start += 10) {
    await Promise.all(Array.from({ length: Math.min(10, count - start) }, (_, k) => one(start + k)));
  }
  return finishReasons;
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

test("in one process, 100 completed requests abort no worker signal", async () => {
  const runtime = createEmbeddedRuntime();
  const engine = new SignalWatchingEngine();
  const worker = await WorkerHost.create({ runtime, id: "w1", engine, modelName: "m", logger: silentLogger });
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  try {
    const finishReasons = await completeRequests(router, 100);
    assert.equal(finishReasons.length, 100);
    await waitUntil(() => engine.ended === 100);
    assert.equal(engine.aborted, 0, `${engine.aborted} of 100 completed requests had their worker's signal aborted`);
  } finally {
    router.close();
    await worker.close();
    await runtime.close();
  }
});

test("in one process, a request whose stop string ends it early still cancels its worker", async () => {
  const runtime = createEmbeddedRuntime();
  const engine = new SignalWatchingEngine();
  const worker = await WorkerHost.create({ runtime, id: "w1", engine, modelName: "m", logger: silentLogger });
  const router = new Router({ runtime, policy: roundRobinPolicy(), logger: silentLogger });
  try {
    const pipeline = await new ModelPipelines(router.workers).get("m");
    // The mocker's text is drawn from its tokenizer's bytes: any single printable byte turns up soon.
    const stops = "abcdefghijklmnopqrstuvwxyz ".split("");
    const params = parseCommonParams({ model: "m", max_tokens: 500, temperature: 0, stop: stops.slice(0, 4) }, ["max_tokens"]);
    const generation = await startGeneration(router, {
      pipeline,
      tokenIds: pipeline.tokenize("a prompt"),
      params,
      signal: new AbortController().signal,
      observer: { onTokens: () => {} },
      migrationLimit: 0,
    });
    let end: { finishReason: string; usage: { completion_tokens: number } } | undefined;
    for await (const event of generation.events) if (event.type === "end") end = event;
    assert.ok(end);
    assert.ok(end.usage.completion_tokens < 500, `the stop strings never matched in ${end.usage.completion_tokens} tokens`);
    await waitUntil(() => engine.ended === 1);
    assert.equal(engine.aborted, 1, "a stream the stop string ended must cancel the rest of its generation");
  } finally {
    router.close();
    await worker.close();
    await runtime.close();
  }
});

let nats: NatsServer;
const connections: NatsConnection[] = [];
before(async () => {
  nats = await startNatsServer();
});
after(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await nats.stop();
});

async function connection(): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url });
  connections.push(nc);
  return nc;
}

test("over NATS, 100 completed requests publish no cancel and abort no worker signal", async () => {
  const shared = createEmbeddedRuntime();
  // Worker and router share discovery and events in this process but call over NATS, each on its own connection.
  const workerSide: Runtime = { ...shared, requests: new NatsRequestPlane(await connection()) };
  const routerSide: Runtime = { ...shared, requests: new NatsRequestPlane(await connection()) };
  const watcher = await connection();
  let cancels = 0;
  let calls = 0;
  // A call's control subject is `<its reply inbox>.cancel`: an empty message there cancels the call.
  watcher.subscribe("_INBOX.*.cancel", {
    callback: (_error, msg) => {
      if (msg.data.length === 0) cancels++;
    },
  });
  watcher.subscribe("armature.rpc.>", { callback: () => void calls++ });
  await watcher.flush();
  const engine = new SignalWatchingEngine();
  const worker = await WorkerHost.create({ runtime: workerSide, id: "w1", engine, modelName: "m", logger: silentLogger });
  const router = new Router({ runtime: routerSide, policy: roundRobinPolicy(), logger: silentLogger });
  try {
    const finishReasons = await completeRequests(router, 100);
    assert.equal(finishReasons.length, 100);
    await waitUntil(() => engine.ended === 100);
    await watcher.flush();
    assert.ok(calls >= 100, `the watcher saw ${calls} calls`);
    assert.equal(cancels, 0, `${cancels} cancel messages were published for 100 requests that completed`);
    assert.equal(engine.aborted, 0, `${engine.aborted} of 100 completed requests had their worker's signal aborted`);
  } finally {
    router.close();
    await worker.close();
    await workerSide.requests.close();
    await shared.close();
  }
});
