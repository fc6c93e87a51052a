import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { eventPlaneContract } from "../../src/runtime/contracts/event-plane-contract.js";
import { requestPlaneContract } from "../../src/runtime/contracts/request-plane-contract.js";
import { NatsEventPlane, NatsRequestPlane } from "../../src/runtime/nats/index.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// The request-plane and event-plane contract suites, against a real nats-server.
let server: NatsServer;
const connections: NatsConnection[] = [];

before(async () => {
  server = await startNatsServer();
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

requestPlaneContract("NATS request plane", async () => {
  // Caller and handler on separate connections, as they are in separate processes.
  const servingSide = new NatsRequestPlane(await connection());
  const callingSide = new NatsRequestPlane(await connection());
  const plane = {
    serve: servingSide.serve.bind(servingSide),
    call: callingSide.call.bind(callingSide),
    open: callingSide.open.bind(callingSide),
    close: () => servingSide.close(),
  };
  return { plane, close: () => servingSide.close() };
});

eventPlaneContract("NATS event plane", async () => {
  const nc = await connection();
  const events = new NatsEventPlane(nc);
  return { events, close: () => events.close() };
});

test("errors keep their code, retryability and field across NATS", async () => {
  const serving = new NatsRequestPlane(await connection());
  const calling = new NatsRequestPlane(await connection());
  const { ArmatureError } = await import("../../src/protocol/index.js");
  await serving.serve("w-errors", async function* () {
    yield 1;
    throw new ArmatureError("PROMPT_TOO_LONG", "too long", { param: "messages", retryable: false });
  });
  await assert.rejects(
    async () => {
      for await (const _ of calling.call("w-errors", {})) {
        /* drain */
      }
    },
    (e: unknown) =>
      (e as { code?: string; param?: string }).code === "PROMPT_TOO_LONG" && (e as { param?: string }).param === "messages",
  );
});

test("a worker that dies mid-stream ends the call with a retryable WORKER_UNAVAILABLE, not a hang", async () => {
  const servingConnection = await connect({ servers: server.url });
  const serving = new NatsRequestPlane(servingConnection, { heartbeatMs: 100 });
  const calling = new NatsRequestPlane(await connection(), { idleTimeoutMs: 500 });
  await serving.serve("w-dies", async function* () {
    for (let i = 0; ; i++) {
      yield i;
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  let received = 0;
  await assert.rejects(
    async () => {
      for await (const _ of calling.call("w-dies", {})) {
        // The worker's process goes away: its connection closes without a word.
        if (++received === 3) await servingConnection.close();
      }
    },
    (e: unknown) =>
      (e as { code?: string; retryable?: boolean }).code === "WORKER_UNAVAILABLE" && (e as { retryable: boolean }).retryable,
  );
});

test("heartbeats keep a slow but live worker's call open past the idle timeout", async () => {
  const serving = new NatsRequestPlane(await connection(), { heartbeatMs: 50 });
  const calling = new NatsRequestPlane(await connection(), { idleTimeoutMs: 300 });
  await serving.serve("w-slow", async function* () {
    await new Promise((r) => setTimeout(r, 800));
    yield "late";
  });
  const got: unknown[] = [];
  for await (const item of calling.call("w-slow", {})) got.push(item);
  assert.deepEqual(got, ["late"]);
  await serving.close();
});
