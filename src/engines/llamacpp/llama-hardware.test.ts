import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import type { GenerateResponse } from "../../protocol/index.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { buildTinyModel } from "../tiny-model/tiny-model.js";
import { defaultThreads } from "./llama-runtime.js";
import { LlamaCppEngine, type LlamaCppEngineOptions } from "./llamacpp-engine.js";

// llama.cpp's hardware flags (--threads, --gpu, --gpu-layers, --batch-size, --flash-attention,
// --kv-cache-type): the default thread count, and each flag the model or build cannot honour
// refused by name before the engine starts.

let tiny: string;
/** 256 wide with 8 heads: 32-wide heads, which a q8_0 cache can hold (the tiny model's are 16). */
let small: string;

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-hardware-"));
  tiny = await ensureTinyModel(dir);
  small = join(dir, "small.gguf");
  await writeFile(small, buildTinyModel({ embeddingLength: 256, layers: 2, heads: 8, feedForwardLength: 512 }));
});

test("default threads: the math cores less one for the event loop, shared by the process's workers; 1 on a GPU", () => {
  const cpu = (cpuMathCores: number) => ({ cpuMathCores, gpu: false as const });
  assert.equal(defaultThreads(cpu(16), 1, 32), 15);
  assert.equal(defaultThreads(cpu(16), 4, 32), 3);
  assert.equal(defaultThreads(cpu(16), 32, 32), 1);
  assert.equal(defaultThreads(cpu(2), 1, 2), 1);
  assert.equal(defaultThreads(cpu(1), 1, 1), 1);
  // Never more than the cores this process may use (a container's CPU limit).
  assert.equal(defaultThreads(cpu(16), 1, 4), 3);
  assert.equal(defaultThreads({ cpuMathCores: 16, gpu: "cuda" }, 1, 32), 1);
});

async function refusal(options: Partial<LlamaCppEngineOptions>, modelPath = tiny): Promise<string> {
  const error = await LlamaCppEngine.create({ modelPath, gpu: "off", ...options }).then(
    async (engine) => {
      await engine.close();
      return undefined;
    },
    (e: Error) => e,
  );
  assert.ok(error, `${JSON.stringify(options)} was not refused`);
  assert.equal((error as Error & { code?: string }).code, "CONFIG_INVALID");
  return error.message;
}

test("flags the model or build cannot honour stop the start with a message naming the flag", async () => {
  assert.match(await refusal({ gpuLayers: 8 }), /^--gpu-layers 8: llama.cpp runs on the CPU/);
  assert.match(await refusal({ batchSize: 4096, contextSizePerSequence: 256 }), /^--batch-size 4096 .*--context-size 256/);
  assert.match(await refusal({ kvCacheType: "q8_0" }), /^--kv-cache-type q8_0 needs --flash-attention on/);
  assert.match(
    await refusal({ kvCacheType: "q8_0", flashAttention: "on" }),
    /^--kv-cache-type q8_0: this model's attention heads are 16 wide/,
  );
});

test("a q8_0 KV cache with flash attention serves greedy tokens and halves the KV bytes a handoff moves", async () => {
  const f16 = await LlamaCppEngine.create({ modelPath: small, gpu: "off", flashAttention: "on", contextSizePerSequence: 256 });
  const q8 = await LlamaCppEngine.create({
    modelPath: small,
    gpu: "off",
    flashAttention: "on",
    kvCacheType: "q8_0",
    contextSizePerSequence: 256,
    threads: 1,
  });
  try {
    // 2 layers × (K and V) × 256 elements: 1,024 elements per token, at 2 bytes (f16) or 34 per 32 (q8_0).
    assert.equal(f16.info.kvBytesPerToken, 2048);
    assert.equal(q8.info.kvBytesPerToken, 1088);
    assert.equal(q8.info.backend, "cpu");
    assert.equal(q8.info.threads, 1);
    const tokens: number[] = [];
    let end: GenerateResponse | undefined;
    const request = {
      type: "generate-request",
      requestId: "q8",
      model: "small",
      tokenIds: [1, 40, 41, 42, 43],
      sampling: { temperature: 0 },
      maxTokens: 8,
      ignoreEos: true,
    } as const;
    for await (const item of q8.generate(request, { signal: new AbortController().signal })) {
      if (item.type === "token-delta") tokens.push(...item.tokenIds);
      end = item;
    }
    assert.equal(end?.type, "request-end");
    assert.equal(tokens.length, 8);
  } finally {
    await Promise.all([f16.close(), q8.close()]);
  }
});
