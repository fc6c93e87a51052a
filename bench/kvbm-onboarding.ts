// Time to first token of a 1,500-token prompt on the 5M-parameter generated model: recomputed
// against loaded back from each KV tier (host memory, local disk, an object store on a directory
// and on an S3 API), and the cost of cutting and assembling blocks against a plain copy of the same
// bytes. Every mode runs in one process, alternating, one thread; medians of RUNS.
// Usage: node --import tsx bench/kvbm-onboarding.ts [RUNS]
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { buildTinyModel, LlamaCppEngine } from "../src/engines/index.js";
import { assembleState, cutBlocks, type KvbmSettings, parseSequenceState } from "../src/kvbm/index.js";
import { PrometheusMeter, silentLogger } from "../src/observability/index.js";
import type { GenerateRequest } from "../src/protocol/index.js";
import { DirectoryObjectStore, S3ObjectStore } from "../src/transfer/index.js";
import { S3RVER_CREDENTIALS, startS3rver } from "../test/helpers/s3rver.js";
import { machine } from "./load/processes.js";

const RUNS = Number(process.argv[2] ?? 7);
const PROMPT = 1500;
const BLOCK = 16;

const modelPath = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(modelPath, buildTinyModel({ embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 }));

/** A prompt of PROMPT token ids that no other run shares (its first block differs). */
let promptsMade = 0;
function freshPrompt(): number[] {
  const seed = ++promptsMade;
  return Array.from({ length: PROMPT }, (_, i) => 10 + ((i * 7919 + seed * 104729) % 240));
}

async function engine(settings: KvbmSettings | undefined): Promise<LlamaCppEngine> {
  return LlamaCppEngine.create({
    modelPath,
    sequences: 1,
    contextSizePerSequence: 2048,
    blockSize: BLOCK,
    ...(settings
      ? { kvbm: { settings, modelName: "bench", workerLabel: "0", meter: new PrometheusMeter(), logger: silentLogger } }
      : {}),
  });
}

/** Milliseconds to the first token, and the prompt tokens the engine reused. */
async function firstToken(e: LlamaCppEngine, tokenIds: number[]): Promise<{ ms: number; cached: number }> {
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: "b",
    model: "bench",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens: 1,
    ignoreEos: true,
  };
  const started = performance.now();
  let ms = 0;
  let cached = 0;
  for await (const item of e.generate(request, { signal: new AbortController().signal })) {
    if (item.type === "token-delta" && ms === 0) ms = performance.now() - started;
    if (item.type === "request-end") cached = item.cachedTokens;
  }
  return { ms, cached };
}

const s3 = await startS3rver();
const admin = new S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
await admin.send(new CreateBucketCommand({ Bucket: "bench" }));
admin.destroy();
const s3Store = await S3ObjectStore.open({
  bucket: "bench",
  endpoint: s3.endpoint,
  forcePathStyle: true,
  credentials: S3RVER_CREDENTIALS,
});

const modes: Array<[string, KvbmSettings | undefined]> = [
  ["recomputed (no tiers)", undefined],
  ["host memory (G2)", { hostBytes: 1024 ** 3 }],
  ["local disk (G3)", { diskDirectory: await mkdtemp(join(tmpdir(), "armature-bench-disk-")), diskFrequencyFilter: false }],
  [
    "object store, directory (G4)",
    { objectStore: new DirectoryObjectStore(await mkdtemp(join(tmpdir(), "armature-bench-obj-"))) },
  ],
  ["object store, S3 API on s3rver (G4)", { objectStore: s3Store }],
];
const engines = await Promise.all(modes.map(([, settings]) => engine(settings)));
const times = modes.map(() => [] as number[]);
const cachedSeen = modes.map(() => 0);
for (let run = 0; run < RUNS; run++) {
  for (const [m, e] of engines.entries()) {
    const prompt = freshPrompt();
    if (m > 0) {
      // Stored once, then evicted from the device by another prompt: it can only come back from the tier.
      await firstToken(e, prompt);
      await firstToken(e, freshPrompt());
      await e.kvbm?.manager.flushed();
    }
    const { ms, cached } = await firstToken(e, prompt);
    times[m]?.push(ms);
    cachedSeen[m] = cached;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const base = median(times[0] as number[]);
console.log(
  `KV tier onboarding — ${machine()} — 5M-parameter generated model, ${PROMPT}-token prompt, block ${BLOCK}, 1 thread, median of ${RUNS}\n`,
);
console.log("| prompt KV | TTFT ms | of recomputing | prompt tokens reused |");
console.log("|---|---:|---:|---:|");
for (const [m, [name]] of modes.entries()) {
  const t = median(times[m] as number[]);
  console.log(`| ${name} | ${t.toFixed(1)} | ${((100 * t) / base).toFixed(1)}% | ${cachedSeen[m]} |`);
}

// Cutting blocks out of a saved state and assembling a state from them, against copying the same bytes.
const saved = await savedState(freshPrompt().slice(0, 96 * BLOCK));
const layout = parseSequenceState(saved);
const blocks = Math.floor(layout.cellCount / BLOCK);
const tokens = Array.from({ length: blocks * BLOCK }, (_, i) => saved.readUInt32LE(layout.tokensOffset + i * 4));
const cutMs: number[] = [];
const assembleMs: number[] = [];
const copyMs: number[] = [];
const payloadBytes = blocks * BLOCK * layout.shape.cellBytes;
const target = Buffer.allocUnsafe(saved.length);
for (let i = 0; i < 31; i++) {
  let t = performance.now();
  const cut = cutBlocks(saved, layout, BLOCK, 0, blocks);
  cutMs.push(performance.now() - t);
  t = performance.now();
  assembleState(layout.shape, tokens, cut);
  assembleMs.push(performance.now() - t);
  t = performance.now();
  saved.copy(target, 0, 0, payloadBytes);
  copyMs.push(performance.now() - t);
}
const gbps = (ms: number) => (payloadBytes / (ms / 1000) / 1e9).toFixed(2);
console.log(
  `\nBlock cut and assembly — ${blocks} blocks of ${BLOCK} tokens, ${(payloadBytes / 1e6).toFixed(2)} MB of KV, median of 31\n`,
);
console.log("| operation | ms | GB/s | of a plain copy |");
console.log("|---|---:|---:|---:|");
for (const [name, xs] of [
  ["cut every block (cutBlocks)", cutMs],
  ["assemble a state (assembleState)", assembleMs],
  ["plain copy of the same bytes (Buffer.copy)", copyMs],
] as const) {
  const t = median(xs);
  console.log(`| ${name} | ${t.toFixed(3)} | ${gbps(t)} | ${((100 * median(copyMs)) / t).toFixed(0)}% |`);
}

await Promise.all(engines.map((x) => x.close()));
await s3Store.close();
await s3.stop();

/** A saved llama.cpp sequence state holding `prompt`, straight from node-llama-cpp. */
async function savedState(prompt: number[]): Promise<Buffer> {
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: 2048, sequences: 1, threads: 1 });
  try {
    const sequence = context.getSequence();
    await sequence.evaluateWithoutGeneratingNewTokens(prompt as Token[]);
    const path = join(await mkdtemp(join(tmpdir(), "armature-bench-state-")), "s.state");
    await sequence.saveStateToFile(path);
    return await readFile(path);
  } finally {
    await context.dispose();
    await model.dispose();
  }
}
