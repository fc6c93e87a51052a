import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { ensureTinyModel, LlamaCppEngine, loadTokenizer } from "../../src/engines/index.js";
import { PrometheusMeter, silentLogger } from "../../src/observability/index.js";
import type { GenerateRequest, RequestEnd } from "../../src/protocol/index.js";
import { type ObjectStore, S3ObjectStore } from "../../src/transfer/index.js";
import { S3RVER_CREDENTIALS, type S3rver, startS3rver } from "../helpers/s3rver.js";

// The object tier (G4) of two llama.cpp workers on a real S3 API (s3rver on a free port): the
// second worker serves a prompt from blocks only the first computed, with the same greedy tokens;
// when the store goes away mid-run, requests are recomputed, never failed.
let s3: S3rver;
let store: ObjectStore;
let modelPath: string;
let prompt: number[];
let recomputed: number[];

async function worker(meter = new PrometheusMeter()) {
  return LlamaCppEngine.create({
    modelPath,
    sequences: 1,
    contextSizePerSequence: 1024,
    blockSize: 16,
    kvbm: { settings: { objectStore: store }, modelName: "tiny", workerLabel: "0", meter, logger: silentLogger },
  });
}

async function run(engine: LlamaCppEngine, tokenIds: number[]): Promise<{ tokens: number[]; end: RequestEnd }> {
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: "r",
    model: "tiny",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens: 12,
    ignoreEos: true,
  };
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of engine.generate(request, { signal: new AbortController().signal })) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  assert.ok(end, "the request ended");
  return { tokens, end };
}

before(async () => {
  s3 = await startS3rver();
  const admin = new S3Client({
    endpoint: s3.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
  });
  await admin.send(new CreateBucketCommand({ Bucket: "kv-blocks" }));
  admin.destroy();
  store = await S3ObjectStore.open({
    bucket: "kv-blocks",
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: S3RVER_CREDENTIALS,
    maxAttempts: 1,
    connectTimeoutMs: 500,
  });
  modelPath = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-llama-")));
  const tokenizer = await loadTokenizer({ kind: "gguf", path: modelPath });
  prompt = tokenizer.encode(Array.from({ length: 30 }, (_, i) => `Shared context line ${i}.`).join(" ")).slice(0, 200);
  const plain = await LlamaCppEngine.create({ modelPath, sequences: 1, contextSizePerSequence: 1024, blockSize: 16 });
  recomputed = (await run(plain, prompt)).tokens;
  await plain.close();
});
after(async () => {
  await store?.close();
  await s3?.stop();
});

test("a second worker serves from S3 the blocks only the first one computed, with the same greedy tokens", async () => {
  const first = await worker();
  assert.equal((await run(first, prompt)).end.cachedTokens, 0);
  await first.kvbm?.manager.flushed();
  await first.close();
  const meter = new PrometheusMeter();
  const second = await worker(meter);
  try {
    const served = await run(second, prompt);
    assert.deepEqual(served.tokens, recomputed);
    // 200 prompt tokens: 12 blocks of 16 come back (one token at least is evaluated).
    assert.equal(served.end.cachedTokens, 192);
    assert.match(await meter.render(), /armature_kvbm_onboard_blocks_total\{model="tiny",from="object"\} 12/);
  } finally {
    await second.close();
  }
});

test("an object store that goes down mid-run costs recomputation, not requests", async () => {
  const meter = new PrometheusMeter();
  const engine = await worker(meter);
  try {
    await s3.stop();
    const served = await run(engine, prompt);
    assert.deepEqual(served.tokens, recomputed, "recomputed with the same tokens");
    assert.equal(served.end.cachedTokens, 0);
    // Its blocks could not be written either: the write failed in the background.
    await engine.kvbm?.manager.flushed();
    const metrics = await meter.render();
    assert.match(metrics, /armature_kvbm_read_failures_total\{model="tiny",tier="object"\} [1-9]/);
    assert.match(metrics, /armature_kvbm_write_failures_total\{model="tiny",tier="object"\} [1-9]/);
  } finally {
    await engine.close();
  }
});
