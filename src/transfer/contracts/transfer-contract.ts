import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { test } from "node:test";
import type { BackendName, Medium } from "../descriptors.js";
import { MemoryObjectStore } from "../object-store.js";
import type { TransferAgent } from "../transfer-agent.js";

/** Two agents placed so that transfers from `local` to `remote` go over the backend under test. */
export interface TransferFixture {
  readonly local: TransferAgent;
  readonly remote: TransferAgent;
  /** Medium of the regions the remote side registers. */
  readonly remoteMedium: Medium;
  close(): Promise<void>;
}

let fileSeq = 0;
const objectStore = new MemoryObjectStore();

/** Registers `bytes` as a region of `agent` in the given medium; returns its id. */
export async function registerBytes(agent: TransferAgent, medium: Medium, bytes: Buffer): Promise<string> {
  if (medium === "memory") return agent.registerMemory(Buffer.from(bytes)).id;
  if (medium === "object") {
    const key = `${agent.name}/contract-${++fileSeq}`;
    await objectStore.write(key, 0, bytes);
    return (await agent.registerObject(objectStore, key)).id;
  }
  const path = agent.sharedPath(`contract-${process.pid}-${++fileSeq}.bin`);
  await writeFile(path, bytes);
  return (await agent.registerFile(path)).id;
}

/** The behaviour every transfer backend must show. Call inside a test file. */
export function transferContract(
  backend: BackendName,
  makeFixture: () => Promise<TransferFixture>,
  label: string = backend,
): void {
  const withFixture = async (body: (f: TransferFixture) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  };

  test(`${label}: read copies remote bytes into local memory`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const bytes = randomBytes(300_000);
      const source = await registerBytes(remote, remoteMedium, bytes);
      const landing = local.registerMemory(Buffer.alloc(bytes.length));
      const result = await local.read([local.describe(landing.id)], [remote.describe(source)]);
      assert.equal(result.backend, backend);
      assert.equal(result.bytes, bytes.length);
      assert.ok(landing.medium === "memory" && landing.buffer.equals(bytes));
    }));

  test(`${label}: write copies local bytes into the remote region`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const bytes = randomBytes(70_000);
      const target = await registerBytes(remote, remoteMedium, Buffer.alloc(bytes.length));
      const source = local.registerMemory(Buffer.from(bytes));
      const result = await local.write([local.describe(source.id)], [remote.describe(target)]);
      assert.equal(result.backend, backend);
      const check = local.registerMemory(Buffer.alloc(bytes.length));
      await local.read([local.describe(check.id)], [remote.describe(target)]);
      assert.ok(check.medium === "memory" && check.buffer.equals(bytes));
    }));

  test(`${label}: one call moves several ranges, each to its place`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const bytes = randomBytes(4096 * 4);
      const source = await registerBytes(remote, remoteMedium, bytes);
      const landing = local.registerMemory(Buffer.alloc(8192));
      // Remote blocks 3 and 1 land at local 0 and 4096.
      await local.read(
        [local.describe(landing.id, 0, 4096), local.describe(landing.id, 4096, 4096)],
        [remote.describe(source, 3 * 4096, 4096), remote.describe(source, 4096, 4096)],
      );
      assert.ok(landing.medium === "memory");
      assert.ok(landing.buffer.subarray(0, 4096).equals(bytes.subarray(3 * 4096)));
      assert.ok(landing.buffer.subarray(4096).equals(bytes.subarray(4096, 8192)));
    }));

  test(`${label}: a large transfer arrives whole (8 MiB into a local file)`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const bytes = randomBytes(8 << 20);
      const source = await registerBytes(remote, remoteMedium, bytes);
      const landingFile = await registerBytes(local, "file", Buffer.alloc(bytes.length));
      await local.read([local.describe(landingFile)], [remote.describe(source)]);
      const check = local.registerMemory(Buffer.alloc(bytes.length));
      await local.read([local.describe(check.id)], [local.describe(landingFile)]);
      assert.ok(check.medium === "memory" && check.buffer.equals(bytes));
    }));

  test(`${label}: the remote agent is notified once the bytes have moved`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const source = await registerBytes(remote, remoteMedium, randomBytes(1000));
      const landing = local.registerMemory(Buffer.alloc(1000));
      const heard = new Promise<[string, string]>((resolve) =>
        remote.onNotification((from, message) => resolve([from, message])),
      );
      await local.read([local.describe(landing.id)], [remote.describe(source)], { notification: "done:req-1" });
      assert.deepEqual(await heard, [local.name, "done:req-1"]);
    }));

  test(`${label}: bad descriptors are refused and change nothing`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const source = await registerBytes(remote, remoteMedium, randomBytes(1000));
      const landing = local.registerMemory(Buffer.alloc(2000));
      const tooLong = { ...remote.describe(source), length: 2000 };
      await assert.rejects(local.read([local.describe(landing.id)], [tooLong]), { code: "REQUEST_INVALID" });
      await assert.rejects(local.read([local.describe(landing.id, 0, 1000)], []), { code: "REQUEST_INVALID" });
      assert.ok(landing.medium === "memory" && landing.buffer.equals(Buffer.alloc(2000)));
    }));

  test(`${label}: a freed remote region fails the transfer with TRANSFER_FAILED`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const source = await registerBytes(remote, remoteMedium, randomBytes(1000));
      const desc = remote.describe(source);
      remote.deregister(source);
      // Owners delete a freed region's file.
      if (desc.path) await rm(desc.path);
      const landing = local.registerMemory(Buffer.alloc(1000));
      await assert.rejects(local.read([local.describe(landing.id)], [desc]), { code: "TRANSFER_FAILED" });
    }));

  test(`${label}: an aborted transfer rejects as cancelled`, () =>
    withFixture(async ({ local, remote, remoteMedium }) => {
      const source = await registerBytes(remote, remoteMedium, randomBytes(1000));
      const landing = local.registerMemory(Buffer.alloc(1000));
      await assert.rejects(
        local.read([local.describe(landing.id)], [remote.describe(source)], { signal: AbortSignal.abort() }),
        (error: { name?: string; code?: string }) => error.name === "AbortError" || error.code === "REQUEST_CANCELLED",
      );
    }));
}
