import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { type AgentMetadata, TransferAgent, type TransferDescriptor } from "../../src/transfer/index.js";

interface ChildAgent {
  readonly metadata: AgentMetadata;
  readonly memory: TransferDescriptor;
  readonly file: TransferDescriptor;
  readonly lines: AsyncIterator<string>;
  stop(): Promise<void>;
}

async function startChildAgent(size: number): Promise<ChildAgent> {
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/transfer-agent-child.ts", String(size)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  const hello = JSON.parse(String(first.value)) as Omit<ChildAgent, "lines" | "stop">;
  return {
    ...hello,
    lines,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.stdin.end();
      await exited;
    },
  };
}

const expected = (size: number): Buffer => {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = i & 0xff;
  return bytes;
};

test("an agent in another process is read over shm on this host and over TCP as if remote", async () => {
  const size = 4 << 20;
  const child = await startChildAgent(size);
  const local = await TransferAgent.create();
  try {
    local.addRemote(child.metadata);
    const landing = local.registerMemory(Buffer.alloc(size));
    const overShm = await local.read([local.describe(landing.id)], [child.file], { notification: "done:shm" });
    assert.equal(overShm.backend, "shm");
    assert.ok(landing.medium === "memory" && landing.buffer.equals(expected(size)));
    assert.deepEqual(JSON.parse(String((await child.lines.next()).value)), { notification: "done:shm", from: local.name });

    landing.buffer.fill(0);
    const overTcp = await local.read([local.describe(landing.id)], [child.memory], { notification: "done:tcp" });
    assert.equal(overTcp.backend, "tcp");
    assert.ok(landing.buffer.equals(expected(size)));
    assert.deepEqual(JSON.parse(String((await child.lines.next()).value)), { notification: "done:tcp", from: local.name });
  } finally {
    await local.close();
    await child.stop();
  }
  assert.equal(existsSync(child.file.path ?? ""), false, "the child's shared folder is removed when its agent closes");
});

test("a transfer from an agent whose process died fails with a retryable TRANSFER_FAILED", async () => {
  const child = await startChildAgent(1 << 20);
  const local = await TransferAgent.create();
  try {
    local.addRemote({ ...child.metadata, hostId: "another-host" });
    await child.stop();
    const landing = local.registerMemory(Buffer.alloc(1 << 20));
    await assert.rejects(local.read([local.describe(landing.id)], [child.memory]), {
      code: "TRANSFER_FAILED",
      retryable: true,
    });
  } finally {
    await local.close();
  }
});
