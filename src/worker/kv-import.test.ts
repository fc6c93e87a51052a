import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { KvHandoff } from "../protocol/index.js";
import { TransferAgent } from "../transfer/index.js";
import { pullKv } from "./kv-import.js";

async function agentsWithExport(bytes: Buffer) {
  const decode = await TransferAgent.create();
  const prefill = await TransferAgent.create();
  decode.addRemote(prefill.metadata, { forceRemote: true });
  const path = prefill.sharedPath("kv-export.state");
  await writeFile(path, bytes);
  const region = await prefill.registerFile(path, { id: "kv-export" });
  const handoff: KvHandoff = {
    id: "0b5c2f1e-9d7a-4c3b-8e2f-1a2b3c4d5e6f",
    prefillWorkerId: "p1",
    format: "llamacpp-sequence-state",
    descriptors: [prefill.describe(region.id)],
    bytes: bytes.length,
    agent: prefill.name,
    promptTokens: 4,
    firstToken: 7,
    cachedTokens: 0,
    expiresInMs: 30_000,
  };
  return {
    decode,
    prefill,
    handoff,
    async [Symbol.asyncDispose]() {
      await decode.close();
      await prefill.close();
    },
  };
}

test("a handoff's KV lands in the decode worker's shared folder", async () => {
  await using f = await agentsWithExport(Buffer.from("exported KV state"));
  const pulled = await pullKv(f.decode, f.handoff, new AbortController().signal, 5000);
  assert.equal(pulled.transfer.bytes, 17);
  await pulled.release();
  assert.deepEqual(
    readdirSync(f.decode.sharedDir).filter((n) => !n.startsWith(".")),
    [],
  );
});

// Regression: the handoff id (from the request plane) named the import file, so `..` in it wrote
// the peer's bytes anywhere the decode worker could write.
test("a handoff id that would put the import file outside the shared folder is refused; nothing is written", async () => {
  await using f = await agentsWithExport(Buffer.from("bytes an attacker chose"));
  const outside = await mkdtemp(join(tmpdir(), "armature-import-escape-"));
  const id = `x/${"../".repeat(12)}${outside.slice(1)}/planted`;
  await assert.rejects(pullKv(f.decode, { ...f.handoff, id }, new AbortController().signal, 5000), {
    code: "TRANSFER_FAILED",
  });
  assert.equal(existsSync(join(outside, "planted.state")), false);
  assert.deepEqual(readdirSync(outside), []);
});

test("a handoff whose byte count disagrees with its descriptors is refused before anything is registered", async () => {
  await using f = await agentsWithExport(Buffer.from("exported KV state"));
  for (const handoff of [
    { ...f.handoff, bytes: 1 << 30 },
    { ...f.handoff, bytes: -1 },
    { ...f.handoff, descriptors: [] },
    { ...f.handoff, descriptors: [{ ...(f.handoff.descriptors[0] as KvHandoff["descriptors"][number]), agent: "someone-else" }] },
  ]) {
    await assert.rejects(pullKv(f.decode, handoff, new AbortController().signal, 5000), { code: "TRANSFER_FAILED" });
  }
  assert.deepEqual(
    readdirSync(f.decode.sharedDir).filter((n) => !n.startsWith(".")),
    [],
  );
});
