import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { MockerEngine } from "../../src/engines/index.js";
import { silentLogger } from "../../src/observability/index.js";
import { type GenerateRequest, type KvEventsDump, subjects } from "../../src/protocol/index.js";
import { createEmbeddedRuntime, encodeMessage, type Runtime } from "../../src/runtime/index.js";
import { NatsEventPlane, NatsRequestPlane } from "../../src/runtime/nats/index.js";
import { WorkerHost } from "../../src/worker/index.js";
import { startArmature } from "../helpers/armature-process.js";
import { startEtcd } from "../helpers/etcd-server.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// Messages larger than nats-server's max_payload, on a server whose max_payload is 64 KiB.
const MAX_PAYLOAD = 64 * 1024;
let server: NatsServer;
const connections: NatsConnection[] = [];

before(async () => {
  server = await startNatsServer(undefined, "127.0.0.1", undefined, { maxPayload: MAX_PAYLOAD });
});
after(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await server.stop();
});

async function connection(): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  return nc;
}

/** An in-memory runtime whose requests and events go over this test's nats-server. */
async function natsRuntime(): Promise<Runtime> {
  const nc = await connection();
  return { ...createEmbeddedRuntime(), requests: new NatsRequestPlane(nc), events: new NatsEventPlane(nc) };
}

test("the server really announces the small max_payload", async () => {
  assert.equal((await connection()).info?.max_payload, MAX_PAYLOAD);
});

// Regression: a stream item over max_payload made the handler's publish throw, so the call failed.
test("a response item five times max_payload arrives whole, between small ones, in order", async () => {
  const serving = new NatsRequestPlane(await connection());
  const calling = new NatsRequestPlane(await connection());
  const big = { blocks: Array.from({ length: 20_000 }, (_, i) => ({ hash: BigInt(i) * 7919n, tokens: i })) };
  assert.ok(encodeMessage(big).length > 5 * MAX_PAYLOAD);
  await serving.serve("w-big", async function* () {
    yield "before";
    yield big;
    yield big;
    yield "after";
  });
  const got: unknown[] = [];
  for await (const item of calling.call("w-big", {})) got.push(item);
  assert.deepEqual(got, ["before", big, big, "after"]);
  await serving.close();
});

// Regression: a KV recovery dump is one message; a full cache's dump exceeded max_payload.
test("a worker's KV dump bigger than max_payload reaches the caller whole", async () => {
  const workerRuntime = await natsRuntime();
  const callerRuntime = await natsRuntime();
  const engine = new MockerEngine({ speedupRatio: 500 });
  const worker = await WorkerHost.create({ runtime: workerRuntime, engine, id: "w-dump", modelName: "m", logger: silentLogger });
  try {
    for (let r = 0; r < 6; r++) {
      const request: GenerateRequest = {
        type: "generate-request",
        requestId: `fill-${r}`,
        model: "m",
        tokenIds: Array.from({ length: 4096 }, (_, i) => (i * 31 + r * 977) % 30_000),
        sampling: { temperature: 0 },
        maxTokens: 1,
      };
      for await (const _ of callerRuntime.requests.call("w-dump", request)) {
        /* drain */
      }
    }
    const expected = engine.dumpKvEvents();
    const answers: unknown[] = [];
    for await (const answer of callerRuntime.requests.call(subjects.kvQuery("w-dump"), {
      type: "kv-events-query",
      fromEventId: 0,
    })) {
      answers.push(answer);
    }
    assert.equal(answers.length, 1);
    const dump = answers[0] as KvEventsDump;
    assert.equal(dump.type, "kv-events-dump");
    assert.ok(encodeMessage(dump).length > MAX_PAYLOAD, `dump of ${encodeMessage(dump).length} bytes`);
    assert.deepEqual(dump.events, expected);
  } finally {
    await worker.close();
    await Promise.all([workerRuntime.close(), callerRuntime.close()]);
  }
});

// Regression: a prompt too large for the bus failed to publish, was taken for a dead worker
// (retryable) and migrated three times before a 503.
test("a prompt too large for the bus fails once with 413, naming nats-server's max_payload", async () => {
  const etcd = await startEtcd();
  const cluster = ["--bus", server.url, "--discovery", `etcd://${etcd.endpoint}`];
  const worker = await startArmature(["worker", ...cluster, "--engine", "mocker", "--speedup-ratio", "100"]);
  const frontend = await startArmature(["frontend", ...cluster, "--port", "0", "--router", "round-robin"]);
  try {
    const started = Date.now();
    const response = await fetch(`${frontend.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      // About 20,000 tokens: within the mocker's context, but over 64 KiB as a request on the bus.
      body: JSON.stringify({ model: "armature-mocker", prompt: "lorem ipsum ".repeat(1700), max_tokens: 2 }),
    });
    const body = (await response.json()) as { error: { message: string; code: string } };
    assert.equal(response.status, 413, JSON.stringify(body));
    assert.equal(body.error.code, "request_too_large");
    assert.match(body.error.message, /max_payload in nats-server's configuration/);
    assert.ok(Date.now() - started < 5000, "failed at once, without retries");
    // The bus still serves requests that fit.
    const small = await fetch(`${frontend.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "armature-mocker", prompt: "hello", max_tokens: 2 }),
    });
    assert.equal(small.status, 200);
  } finally {
    await frontend.stop();
    await worker.stop();
    await etcd.stop();
  }
});
