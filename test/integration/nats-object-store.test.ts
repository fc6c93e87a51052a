import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { objectStoreContract } from "../../src/transfer/contracts/object-store-contract.js";
import { NatsObjectStore, openObjectStore } from "../../src/transfer/index.js";
import { type NatsServer, startNatsServer } from "../helpers/nats-server.js";

// The object store contract against a real nats-server with JetStream, on free loopback ports.
let server: NatsServer;
let storeDir: string;
const connections: NatsConnection[] = [];
let bucketSeq = 0;

before(async () => {
  storeDir = await mkdtemp(join(tmpdir(), "armature-js-objects-"));
  server = await startNatsServer(undefined, "127.0.0.1", storeDir);
});
after(async () => {
  await Promise.all(connections.map((c) => c.close()));
  await server.stop();
  await rm(storeDir, { recursive: true, force: true });
});

async function connection(url = server.url): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  connections.push(nc);
  return nc;
}

async function dropBucket(nc: NatsConnection, bucket: string): Promise<void> {
  await (await jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`);
}

objectStoreContract(
  "NATS JetStream object store",
  async () => {
    const nc = await connection();
    const bucket = `contract-${++bucketSeq}`;
    const store = await NatsObjectStore.open(nc, { bucket });
    return { store, close: () => dropBucket(nc, bucket) };
  },
  { atomicPutIfAbsent: true },
);

test("racing putIfAbsent from separate connections, as from separate workers: exactly one wins", async () => {
  const bucket = `across-${++bucketSeq}`;
  const stores = await Promise.all(Array.from({ length: 4 }, async () => NatsObjectStore.open(await connection(), { bucket })));
  try {
    for (let round = 0; round < 5; round++) {
      const key = `kv/${round}`;
      const payloads = stores.map(() => randomBytes(200 * 1024));
      const won = await Promise.all(stores.map((s, i) => s.putIfAbsent(key, payloads[i] as Buffer)));
      assert.equal(won.filter(Boolean).length, 1, `round ${round}: ${won}`);
      const stored = await (stores[3] as NatsObjectStore).get(key);
      assert.deepEqual(stored, payloads[won.indexOf(true)]);
    }
    // The losers' chunks were purged: the stream holds each object once (2 chunks and a metadata message).
    const info = await (await jetstreamManager(connections.at(-1) as NatsConnection)).streams.info(`OBJ_${bucket}`);
    assert.equal(info.state.messages, 5 * 3);
  } finally {
    await dropBucket(connections.at(-1) as NatsConnection, bucket);
  }
});

test("a nats:// URL opens a bucket on the given bus connection, and needs one", async () => {
  const nc = await connection();
  const bucket = `url-${++bucketSeq}`;
  const store = await openObjectStore(`nats://${bucket}`, { nats: nc });
  try {
    assert.equal(await store.putIfAbsent("kv/1", Buffer.from("block")), true);
    const again = await openObjectStore(`nats://${bucket}`, { nats: await connection() });
    assert.equal((await again.get("kv/1"))?.toString(), "block");
  } finally {
    await dropBucket(nc, bucket);
  }
  await assert.rejects(openObjectStore(`nats://${bucket}`), (error: Error & { code?: string }) => {
    assert.equal(error.code, "CONFIG_INVALID");
    assert.ok(error.message.includes(`nats://${bucket}`), error.message);
    return true;
  });
});

test("a bus without JetStream is refused at open, saying how to turn it on", async () => {
  const plain = await startNatsServer();
  try {
    const nc = await connection(plain.url);
    await assert.rejects(NatsObjectStore.open(nc, { bucket: "kv", timeoutMs: 2000 }), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, /-js/);
      return true;
    });
  } finally {
    await plain.stop();
  }
});

test("a stopped bus fails operations as retryable TRANSFER_FAILED", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-js-objects-"));
  const own = await startNatsServer(undefined, "127.0.0.1", dir);
  try {
    const nc = await connection(own.url);
    const store = await NatsObjectStore.open(nc, { bucket: "going-away", timeoutMs: 1000 });
    assert.equal(await store.putIfAbsent("kv/1", Buffer.from("block")), true);
    await own.stop();
    const retryable = { code: "TRANSFER_FAILED", retryable: true };
    await assert.rejects(store.get("kv/1"), retryable);
    await assert.rejects(store.putIfAbsent("kv/2", Buffer.from("block")), retryable);
  } finally {
    await own.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
