import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { startCorruptingProxy } from "../../test/helpers/corrupting-proxy.js";
import { TransferAgent } from "./transfer-agent.js";

async function throughProxy(direction: "down" | "up", retries: number) {
  const local = await TransferAgent.create({ retries });
  const remote = await TransferAgent.create();
  // Byte 100,000 is well inside the payload of the first data frame.
  const proxy = await startCorruptingProxy(remote.metadata.address.port, { at: 100_000, direction });
  local.addRemote(
    { ...remote.metadata, hostId: "another-host", address: { host: "127.0.0.1", port: proxy.port } },
    { forceRemote: true },
  );
  return {
    local,
    remote,
    proxy,
    async [Symbol.asyncDispose]() {
      await local.close();
      await remote.close();
      await proxy.close();
    },
  };
}

test("a read corrupted in flight fails its checksum and is retried whole", async () => {
  await using f = await throughProxy("down", 2);
  const bytes = randomBytes(1 << 20);
  const source = f.remote.registerMemory(Buffer.from(bytes));
  const landing = f.local.registerMemory(Buffer.alloc(bytes.length));
  const result = await f.local.read([f.local.describe(landing.id)], [f.remote.describe(source.id)]);
  assert.equal(f.proxy.corrupted(), 1);
  assert.equal(result.attempts, 2);
  assert.ok(landing.medium === "memory" && landing.buffer.equals(bytes));
});

test("a write corrupted in flight is refused by the receiver and retried", async () => {
  await using f = await throughProxy("up", 2);
  const bytes = randomBytes(1 << 20);
  const target = f.remote.registerMemory(Buffer.alloc(bytes.length));
  const source = f.local.registerMemory(Buffer.from(bytes));
  const result = await f.local.write([f.local.describe(source.id)], [f.remote.describe(target.id)]);
  assert.equal(f.proxy.corrupted(), 1);
  assert.equal(result.attempts, 2);
  assert.ok(target.medium === "memory" && target.buffer.equals(bytes));
});

test("without retries a corrupted transfer fails with TRANSFER_CORRUPTED", async () => {
  await using f = await throughProxy("down", 0);
  const source = f.remote.registerMemory(randomBytes(1 << 20));
  const landing = f.local.registerMemory(Buffer.alloc(1 << 20));
  await assert.rejects(f.local.read([f.local.describe(landing.id)], [f.remote.describe(source.id)]), {
    code: "TRANSFER_CORRUPTED",
  });
});

test("an agent bound to every interface advertises an address peers can dial, and is reached there", async () => {
  const secret = "a-test-secret-of-at-least-32-characters";
  const remote = await TransferAgent.create({ host: "0.0.0.0", secret });
  const local = await TransferAgent.create({ secret });
  try {
    assert.notEqual(remote.metadata.address.host, "0.0.0.0");
    local.addRemote({ ...remote.metadata, hostId: "another-host" }, { forceRemote: true });
    const source = remote.registerMemory(Buffer.from("over the advertised address"));
    const landing = local.registerMemory(Buffer.alloc(source.length));
    const result = await local.read([local.describe(landing.id)], [remote.describe(source.id)]);
    assert.equal(result.backend, "tcp");
    assert.ok(landing.medium === "memory" && landing.buffer.toString() === "over the advertised address");
  } finally {
    await local.close();
    await remote.close();
  }
});
