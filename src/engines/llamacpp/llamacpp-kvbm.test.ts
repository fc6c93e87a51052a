import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import type { KvbmSettings } from "../../kvbm/index.js";
import { PrometheusMeter, silentLogger } from "../../observability/index.js";
import type { GenerateRequest, KvEvent, RequestEnd } from "../../protocol/index.js";
import { DirectoryObjectStore } from "../../transfer/index.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { LlamaCppEngine } from "./llamacpp-engine.js";

const BLOCK = 16;
let modelPath: string;
let prompt: number[];
let others: number[][];
/** Greedy tokens of the prompt computed from scratch by an engine without tiers. */
let recomputed: number[];

async function engineWith(settings: KvbmSettings | undefined, meter = new PrometheusMeter()) {
  return LlamaCppEngine.create({
    modelPath,
    // One sequence: any other prompt evicts the previous one from the device.
    sequences: 1,
    contextSizePerSequence: 1024,
    blockSize: BLOCK,
    ...(settings ? { kvbm: { settings, modelName: "tiny", workerLabel: "0", meter, logger: silentLogger } } : {}),
  });
}

async function run(engine: LlamaCppEngine, tokenIds: number[]): Promise<{ tokens: number[]; end: RequestEnd }> {
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: "r",
    model: "tiny",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens: 16,
    ignoreEos: true,
  };
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of engine.generate(request, { signal: new AbortController().signal })) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  assert.ok(end);
  return { tokens, end };
}

before(async () => {
  modelPath = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-llama-")));
  const tokenizer = await GgufTokenizer.load(modelPath);
  const text = (seed: string) => Array.from({ length: 40 }, (_, i) => `${seed} sentence number ${i}.`).join(" ");
  prompt = tokenizer.encode(text("A shared system prompt")).slice(0, 300);
  others = ["Another user entirely", "Something else again"].map((s) => tokenizer.encode(text(s)).slice(0, 300));
  assert.equal(prompt.length, 300);
  const plain = await engineWith(undefined);
  recomputed = (await run(plain, prompt)).tokens;
  await plain.close();
});

/** Blocks of the prompt that can come back: at least one token is left to evaluate. */
const reusable = Math.floor((300 - 1) / BLOCK) * BLOCK;

test("a prompt evicted from the device comes back from the host tier with the same greedy tokens", async () => {
  const engine = await engineWith({ hostBytes: 64 * 1024 * 1024 });
  try {
    const first = await run(engine, prompt);
    assert.deepEqual(first.tokens, recomputed);
    assert.equal(first.end.cachedTokens, 0);
    await run(engine, others[0] as number[]);
    const again = await run(engine, prompt);
    assert.deepEqual(again.tokens, recomputed, "same greedy tokens as recomputing");
    assert.equal(again.end.cachedTokens, reusable);
    assert.equal(again.end.hostCachedTokens, reusable);
    // What a router weighs the tiers with: the measured prefill rate and host onboarding bandwidth.
    const costs = engine.load().kvCosts;
    assert.ok((costs?.prefillTokensPerSecond ?? 0) > 0, JSON.stringify(costs));
    assert.ok((costs?.onboardBytesPerSecond?.host_pinned ?? 0) > 0, JSON.stringify(costs));
  } finally {
    await engine.close();
  }
});

test("a restarted worker serves a prompt from its disk tier and announces the blocks to its first listener", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-disk-"));
  const first = await engineWith({ diskDirectory: directory, diskFrequencyFilter: false });
  await run(first, prompt);
  await first.close();

  const restarted = await engineWith({ diskDirectory: directory });
  try {
    const heard: KvEvent[] = [];
    restarted.onKvEvents((events) => heard.push(...events));
    const diskBlocks = heard.flatMap((e) => (e.type === "kv-block-stored" && e.storageTier === "disk" ? e.blocks : []));
    // 300 prompt tokens and 15 generated tokens evaluated: 19 complete blocks of 16.
    assert.equal(diskBlocks.length, Math.floor((300 + 15) / BLOCK));
    const again = await run(restarted, prompt);
    assert.deepEqual(again.tokens, recomputed);
    assert.equal(again.end.cachedTokens, reusable);
  } finally {
    await restarted.close();
  }
});

test("a second worker serves a prompt from a shared object tier that only the first one computed", async () => {
  const store = new DirectoryObjectStore(await mkdtemp(join(tmpdir(), "armature-kvbm-object-")));
  const a = await engineWith({ objectStore: store });
  await run(a, prompt);
  await a.kvbm?.manager.flushed();
  await a.close();
  const meter = new PrometheusMeter();
  const b = await engineWith({ objectStore: store }, meter);
  try {
    const served = await run(b, prompt);
    assert.deepEqual(served.tokens, recomputed);
    assert.equal(served.end.cachedTokens, reusable);
    assert.match(await meter.render(), /armature_kvbm_onboard_blocks_total\{model="tiny",from="object"\} 18/);
  } finally {
    await b.close();
  }
});

test("corrupted blocks are recomputed: the client sees no error and the same tokens, a metric counts them", async () => {
  const directory = await mkdtemp(join(tmpdir(), "armature-kvbm-disk-"));
  const first = await engineWith({ diskDirectory: directory, diskFrequencyFilter: false });
  await run(first, prompt);
  await first.close();
  // Damage every block file's last payload byte.
  const [layout] = await readdir(directory);
  const folder = join(directory, layout as string);
  for (const name of await readdir(folder)) {
    const bytes = await readFile(join(folder, name));
    bytes.writeUInt8((bytes.at(-1) ?? 0) ^ 0xff, bytes.length - 1);
    await writeFile(join(folder, name), bytes);
  }
  const meter = new PrometheusMeter();
  const restarted = await engineWith({ diskDirectory: directory }, meter);
  try {
    const served = await run(restarted, prompt);
    assert.deepEqual(served.tokens, recomputed);
    assert.equal(served.end.cachedTokens, 0);
    assert.match(await meter.render(), /armature_kvbm_checksum_failures_total\{model="tiny",tier="disk"\} [1-9]/);
  } finally {
    await restarted.close();
  }
});
