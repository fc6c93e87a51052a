import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { isArmatureError } from "../../src/protocol/index.js";
import { NatsRequestPlane, type NatsRequestPlaneOptions } from "../../src/runtime/nats/index.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// Flow control and progress-based liveness of the NATS request plane, against a real nats-server.
let server: NatsServer;
const connections: NatsConnection[] = [];

before(async () => {
  server = await startNatsServer();
});
after(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await server.stop();
});

async function planes(options: NatsRequestPlaneOptions): Promise<{ serving: NatsRequestPlane; calling: NatsRequestPlane }> {
  const [a, b] = [await connect({ servers: server.url }), await connect({ servers: server.url })];
  connections.push(a, b);
  return { serving: new NatsRequestPlane(a, options), calling: new NatsRequestPlane(b, options) };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// Regression: the caller's inbox was unbounded, so a fast worker and a slow client filled memory.
test("a slow consumer pauses the handler at the window; every item still arrives, in order", async () => {
  const window = 16;
  const { serving, calling } = await planes({ window, heartbeatMs: 50, idleTimeoutMs: 500, progressTimeoutMs: 300 });
  let produced = 0;
  await serving.serve("w-fast", async function* () {
    for (let i = 0; i < 2000; i++) {
      produced++;
      yield i;
    }
  });
  const got: number[] = [];
  for await (const item of calling.call("w-fast", {})) {
    got.push(item as number);
    if (got.length === 5) {
      // The consumer stalls for longer than the progress timeout: the handler must wait, not
      // run ahead, and the wait must not be taken for a stuck worker.
      await sleep(1000);
      assert.ok(produced <= window + 5 + 1, `the handler ran ahead to ${produced} items while the consumer read 5`);
    }
  }
  assert.deepEqual(
    got,
    Array.from({ length: 2000 }, (_, i) => i),
  );
  await serving.close();
});

// Regression: the heartbeat was a timer, so an engine stuck mid-request kept its caller waiting forever.
test("a handler that beats but produces nothing fails the call retryably after the progress timeout", async () => {
  const { serving, calling } = await planes({ heartbeatMs: 50, idleTimeoutMs: 300, progressTimeoutMs: 500 });
  let handlerCancelled = false;
  await serving.serve("w-wedged", async function* (_payload, { signal }) {
    yield "first token";
    // Wedged: never yields again, though its process (and heartbeat) is alive.
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    handlerCancelled = true;
  });
  const started = Date.now();
  const got: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const item of calling.call("w-wedged", {})) got.push(item);
    },
    (e: unknown) => isArmatureError(e) && e.code === "WORKER_UNAVAILABLE" && e.retryable && /produced nothing/.test(e.message),
  );
  const elapsed = Date.now() - started;
  assert.deepEqual(got, ["first token"]);
  assert.ok(elapsed >= 450 && elapsed < 3000, `failed after ${elapsed} ms`);
  const deadline = Date.now() + 2000;
  while (!handlerCancelled && Date.now() < deadline) await sleep(20);
  assert.ok(handlerCancelled, "the wedged handler is told to stop");
  await serving.close();
});

test("a long prefill that reports progress outlives the progress timeout", async () => {
  const { serving, calling } = await planes({ heartbeatMs: 50, idleTimeoutMs: 300, progressTimeoutMs: 400 });
  await serving.serve("w-prefill", async function* (_payload, { reportProgress }) {
    for (let chunk = 0; chunk < 10; chunk++) {
      await sleep(120);
      reportProgress?.();
    }
    yield "first token after 1.2 s";
  });
  const got: unknown[] = [];
  for await (const item of calling.call("w-prefill", {})) got.push(item);
  assert.deepEqual(got, ["first token after 1.2 s"]);
  await serving.close();
});

test("a silent prefill longer than the progress timeout is taken for a stuck worker", async () => {
  const { serving, calling } = await planes({ heartbeatMs: 50, idleTimeoutMs: 300, progressTimeoutMs: 400 });
  await serving.serve("w-silent", async function* () {
    await sleep(1200);
    yield "too late";
  });
  await assert.rejects(
    async () => {
      for await (const _ of calling.call("w-silent", {})) {
        /* drain */
      }
    },
    (e: unknown) => isArmatureError(e) && e.code === "WORKER_UNAVAILABLE" && e.retryable,
  );
  await serving.close();
});

// Regression: a caller that never granted more credit (gone, or hostile) parked the handler forever,
// holding its engine's sequence and keeping its process from exiting.
test("a handler whose caller reads nothing for the credit timeout gives the call up and frees what it holds", async () => {
  const { serving, calling } = await planes({ window: 2, heartbeatMs: 50, idleTimeoutMs: 5000, creditTimeoutMs: 300 });
  let released = false;
  await serving.serve("w-starved", async function* () {
    try {
      for (let i = 0; ; i++) yield i;
    } finally {
      released = true;
    }
  });
  const iterator = calling.call("w-starved", {})[Symbol.asyncIterator]();
  assert.deepEqual(await iterator.next(), { done: false, value: 0 });
  await sleep(1000); // reads nothing more: no credit goes back
  assert.equal(released, true, "the handler ended and ran its cleanup");
  await assert.rejects(
    async () => {
      for (;;) if ((await iterator.next()).done) break;
    },
    (e: unknown) => isArmatureError(e) && e.code === "REQUEST_CANCELLED" && /read nothing for 300 ms/.test(e.message),
  );
  await serving.close();
});
