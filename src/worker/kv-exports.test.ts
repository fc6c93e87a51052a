import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { test } from "node:test";
import type { Engine } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import type { GenerateRequest, KvHandoff } from "../protocol/index.js";
import { VirtualClock } from "../runtime/index.js";
import { TransferAgent } from "../transfer/index.js";
import { servePrefill } from "./disaggregated-phases.js";
import { KvExports } from "./kv-exports.js";

const request: GenerateRequest = {
  type: "generate-request",
  requestId: "r",
  model: "m",
  tokenIds: [1, 2, 3, 4],
  sampling: { temperature: 0 },
  maxTokens: 1,
  disaggregation: { phase: "prefill" },
};

/** An engine whose prefill writes an export of `bytes` bytes, as llama.cpp's does. */
function exportingEngine(bytes: number): Engine & { prefills: number } {
  const engine = {
    prefills: 0,
    info: { kind: "fake" },
    async prefill(_request: GenerateRequest, options: { exportPath: string }) {
      engine.prefills++;
      await writeFile(options.exportPath, Buffer.alloc(bytes, 1));
      return {
        firstToken: 9,
        cachedTokens: 0,
        kv: { format: "llamacpp-sequence-state" as const, path: options.exportPath, bytes },
      };
    },
  };
  return engine as unknown as Engine & { prefills: number };
}

async function prefill(engine: Engine, exports: KvExports): Promise<KvHandoff> {
  let handoff: KvHandoff | undefined;
  for await (const response of servePrefill(engine, exports, "p1", request, new AbortController().signal)) {
    if (response.type === "request-end") handoff = response.kvHandoff;
  }
  return handoff as KvHandoff;
}

async function fixture(caps: { maxExports?: number; maxBytes?: number; minFreeBytes?: number; modelledOnly?: boolean }) {
  const agent = await TransferAgent.create();
  const exports = new KvExports({ agent, clock: new VirtualClock(), logger: silentLogger, ttlMs: 30_000, ...caps });
  return {
    agent,
    exports,
    files: () => readdirSync(agent.sharedDir).filter((n) => n.startsWith("kv-")),
    async [Symbol.asyncDispose]() {
      await exports.close();
      await agent.close();
    },
  };
}

const refusedRetryably = { code: "TRANSFER_FAILED", retryable: true, message: /decode worker/ };

// Regression: exports were unbounded, so a burst of prefills filled /dev/shm (64 MiB in Docker).
test("exports beyond the count cap are refused retryably, leave no file, and a freed one makes room", async () => {
  await using f = await fixture({ maxExports: 2 });
  const engine = exportingEngine(100);
  const first = await prefill(engine, f.exports);
  await prefill(engine, f.exports);
  await assert.rejects(prefill(engine, f.exports), refusedRetryably);
  assert.equal(engine.prefills, 2, "the refused request was not prefilled here");
  assert.equal(f.exports.size, 2);
  assert.equal(f.files().length, 2);
  await f.exports.free(first.id, "confirmed");
  await prefill(engine, f.exports);
  assert.equal(f.exports.size, 2);
});

test("an export that would take held bytes over the cap is refused and its file removed", async () => {
  await using f = await fixture({ maxBytes: 1000 });
  const engine = exportingEngine(600);
  await prefill(engine, f.exports);
  await assert.rejects(prefill(engine, f.exports), refusedRetryably);
  assert.equal(f.exports.size, 1);
  assert.equal(f.exports.heldBytes, 600);
  assert.equal(f.files().length, 1);
});

test("modelled-only exports never look at the shared folder: no free-space check, no file removed", async () => {
  // A replay in virtual time repeats only if nothing on a request's path waits for real I/O.
  await using f = await fixture({ minFreeBytes: Number.MAX_SAFE_INTEGER, modelledOnly: true });
  let looked = 0;
  f.agent.sharedFreeBytes = async () => {
    looked++;
    return 0;
  };
  const { id, path } = await f.exports.newExport(4);
  await writeFile(path, "left by an engine that models its exports but wrote anyway");
  await f.exports.free(id, "failed", path);
  assert.equal(looked, 0);
  assert.deepEqual(f.files().length, 1, "the file was not looked for");
});

test("a shared folder short of free space refuses the export before the engine runs", async () => {
  await using f = await fixture({ minFreeBytes: Number.MAX_SAFE_INTEGER });
  const engine = exportingEngine(100);
  await assert.rejects(prefill(engine, f.exports), { ...refusedRetryably, message: /free/ });
  assert.equal(engine.prefills, 0);
  assert.deepEqual(f.files(), []);
});
