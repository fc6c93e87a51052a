import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect, createServer, type Socket } from "node:net";
import { test } from "node:test";
import { StreamingChecksum } from "./checksum.js";
import { TransferAgent } from "./transfer-agent.js";

// The TCP listener is a trust boundary: what a peer sends is checked before it is used, and a
// deployment secret decides who may connect at all.

function encode(header: object, payload?: Buffer, badTrailer = false): Buffer {
  const json = Buffer.from(JSON.stringify(payload ? { ...header, length: payload.length } : header));
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(json.length, 0);
  if (!payload) return Buffer.concat([prefix, json]);
  const hash = new StreamingChecksum();
  hash.update(payload);
  const trailer = Buffer.alloc(8);
  trailer.writeBigUInt64LE(badTrailer ? hash.digest() ^ 1n : hash.digest(), 0);
  return Buffer.concat([prefix, json, payload, trailer]);
}

/** A raw socket to an agent's listener, collecting what comes back. */
async function rawPeer(port: number) {
  const socket: Socket = connect({ host: "127.0.0.1", port });
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  return {
    socket,
    closed,
    text: () => Buffer.concat(received).toString("latin1"),
    async until(pattern: RegExp, ms = 2000): Promise<void> {
      for (const deadline = Date.now() + ms; !pattern.test(this.text()); ) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern}; got ${this.text()}`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
  };
}

async function withAgents<T>(
  options: { remoteSecret?: string; localSecret?: string },
  body: (local: TransferAgent, remote: TransferAgent) => Promise<T>,
): Promise<T> {
  const remote = await TransferAgent.create(options.remoteSecret ? { secret: options.remoteSecret } : {});
  const local = await TransferAgent.create(options.localSecret ? { secret: options.localSecret } : {});
  local.addRemote({ ...remote.metadata, hostId: "another-host" }, { forceRemote: true });
  try {
    return await body(local, remote);
  } finally {
    await local.close();
    await remote.close();
  }
}

async function readOnce(local: TransferAgent, remote: TransferAgent, bytes: Buffer): Promise<Buffer> {
  const source = remote.registerMemory(Buffer.from(bytes));
  const landing = local.registerMemory(Buffer.alloc(bytes.length));
  await local.read([local.describe(landing.id)], [remote.describe(source.id)]);
  assert.ok(landing.medium === "memory");
  return landing.buffer;
}

// Regression: a malformed frame was dropped silently (or crashed the parser) with no count kept.
test("a malformed frame closes that connection, is counted, and the agent keeps serving", async () => {
  await withAgents({}, async (local, remote) => {
    for (const garbage of [Buffer.from([0xff, 0xff, 0xff, 0xff]), encode({ op: "explode", id: 1 })]) {
      const peer = await rawPeer(remote.metadata.address.port);
      peer.socket.write(garbage);
      await peer.closed;
    }
    assert.equal(remote.refusedConnections.malformed, 2);
    const bytes = randomBytes(10_000);
    assert.ok((await readOnce(local, remote, bytes)).equals(bytes));
  });
});

// Regression: a write to an unregistered region allocated whatever length the peer declared.
test("a write to an unknown region is answered with an error; its bytes are dropped, not allocated", async () => {
  await withAgents({}, async (_local, remote) => {
    const peer = await rawPeer(remote.metadata.address.port);
    peer.socket.write(encode({ op: "write", id: 1, region: "nope", offset: 0 }, Buffer.alloc(100_000)));
    peer.socket.write(encode({ op: "notify", id: 2, from: "x", message: "still in step" }));
    await peer.until(/"op":"ack","id":2/);
    assert.match(peer.text(), /"op":"error","id":1,"code":"TRANSFER_FAILED"/);
    // A header that declares 1 GiB for a region that does not exist, then a trickle of bytes.
    const before = process.memoryUsage().arrayBuffers;
    const header = Buffer.from(JSON.stringify({ op: "write", id: 3, region: "nope", offset: 0, length: 1 << 30 }));
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(header.length, 0);
    peer.socket.write(Buffer.concat([prefix, header, Buffer.alloc(1000)]));
    await new Promise((r) => setTimeout(r, 200));
    const grown = process.memoryUsage().arrayBuffers - before;
    assert.ok(grown < 64 << 20, `the listener allocated ${grown} bytes for a peer's declared length`);
    peer.socket.destroy();
  });
});

// Regression: a write frame's payload landed in the registered region before its checksum was checked.
test("a write whose checksum does not match never shows its bytes in the target region", async () => {
  await withAgents({}, async (_local, remote) => {
    const target = remote.registerMemory(Buffer.alloc(1000));
    const peer = await rawPeer(remote.metadata.address.port);
    peer.socket.write(encode({ op: "write", id: 1, region: target.id, offset: 0 }, Buffer.alloc(1000, 0xab), true));
    await peer.until(/"code":"TRANSFER_CORRUPTED"/);
    assert.ok(target.medium === "memory" && target.buffer.equals(Buffer.alloc(1000)), "the region is untouched");
    peer.socket.write(encode({ op: "write", id: 2, region: target.id, offset: 0 }, Buffer.alloc(1000, 0xcd)));
    await peer.until(/"op":"ack","id":2/);
    assert.ok(target.buffer.equals(Buffer.alloc(1000, 0xcd)), "an intact write lands");
    peer.socket.destroy();
  });
});

test("an agent bound beyond loopback without a secret refuses to start, naming --transfer-secret", async () => {
  await assert.rejects(TransferAgent.create({ host: "0.0.0.0" }), {
    code: "CONFIG_INVALID",
    message: /--transfer-secret/,
  });
});

test("agents sharing a secret authenticate and transfer; the secret never crosses the wire", async () => {
  const secret = randomBytes(32).toString("hex");
  const remote = await TransferAgent.create({ secret });
  const local = await TransferAgent.create({ secret });
  const seen: Buffer[] = [];
  const proxy = createServer((client) => {
    const upstream = connect({ host: "127.0.0.1", port: remote.metadata.address.port });
    client.on("data", (chunk: Buffer) => {
      seen.push(Buffer.from(chunk));
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      seen.push(Buffer.from(chunk));
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const proxyPort = (proxy.address() as { port: number }).port;
  try {
    local.addRemote(
      { ...remote.metadata, hostId: "another-host", address: { host: "127.0.0.1", port: proxyPort } },
      { forceRemote: true },
    );
    const bytes = randomBytes(50_000);
    assert.ok((await readOnce(local, remote, bytes)).equals(bytes));
    const wire = Buffer.concat(seen);
    assert.ok(wire.length > bytes.length, "the traffic went through the proxy");
    assert.equal(wire.includes(Buffer.from(secret)), false, "the secret is not on the wire");
    assert.equal(remote.refusedConnections.unauthenticated, 0);
  } finally {
    await local.close();
    await remote.close();
    await new Promise((r) => proxy.close(r));
  }
});

// Regression: the transfer port served anyone who could reach it.
test("a peer with a wrong or missing secret is refused and counted, and reads nothing", async () => {
  const secret = randomBytes(32).toString("hex");
  for (const localSecret of [randomBytes(32).toString("hex"), undefined]) {
    await withAgents({ remoteSecret: secret, ...(localSecret ? { localSecret } : {}) }, async (local, remote) => {
      await assert.rejects(readOnce(local, remote, randomBytes(100)), { code: "TRANSFER_FAILED", message: /transfer-secret/ });
      if (localSecret) assert.equal(remote.refusedConnections.unauthenticated, 1);
    });
  }
});

test("a raw socket that skips the handshake gets no bytes and is closed", async () => {
  const secret = randomBytes(32).toString("hex");
  const remote = await TransferAgent.create({ secret });
  try {
    const source = remote.registerMemory(Buffer.from("the KV cache of someone else"));
    const peer = await rawPeer(remote.metadata.address.port);
    peer.socket.write(encode({ op: "read", id: 1, region: source.id, offset: 0, readLength: source.length }));
    await peer.closed;
    assert.doesNotMatch(peer.text(), /someone else/);
    assert.equal(remote.refusedConnections.unauthenticated, 1);
  } finally {
    await remote.close();
  }
});

test("a client that holds a secret refuses a listener that does not ask for one", async () => {
  await withAgents({ localSecret: randomBytes(32).toString("hex") }, async (local, remote) => {
    await assert.rejects(readOnce(local, remote, randomBytes(100)), { code: "TRANSFER_FAILED", message: /transfer-secret/ });
  });
});

// Regression: calibration dialled 127.0.0.1 whatever address the listener was bound to, so a worker
// bound to one interface (as docs/disaggregation.md advises) failed to start.
test("an agent bound to one address calibrates over that address", async () => {
  const agent = await TransferAgent.create({ host: "127.0.0.2" });
  try {
    const models = await agent.calibrate();
    assert.ok(models.tcp.bytesPerMs > 0);
  } finally {
    await agent.close();
  }
});
