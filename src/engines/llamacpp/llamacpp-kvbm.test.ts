import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";
import { until } from "../../../test/helpers/poll.js";
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

async function engineWith(settings: KvbmSettings | undefined, meter = new PrometheusMeter(), sequences = 1) {
  return LlamaCppEngine.create({
    modelPath,
    // One sequence by default: any other prompt evicts the previous one from the device.
    sequences,
    contextSizePerSequence: 1024,
    blockSize: BLOCK,
    ...(settings ? { kvbm: { settings, modelName: "tiny", workerLabel: "0", meter, logger: silentLogger } } : {}),
  });
}

function greedy(tokenIds: number[], maxTokens: number): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model: "tiny",
    tokenIds,
    sampling: { temperature: 0 },
    maxTokens,
    ignoreEos: true,
  };
}

async function run(engine: LlamaCppEngine, tokenIds: number[]): Promise<{ tokens: number[]; end: RequestEnd }> {
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of engine.generate(greedy(tokenIds, 16), { signal: new AbortController().signal })) {
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

/** Blocks the engine's host tier holds. */
function hostBlocks(engine: LlamaCppEngine): number {
  const stored = engine.kvbm?.manager.dump() ?? [];
  return stored.reduce(
    (sum, e) => sum + (e.type === "kv-block-stored" && e.storageTier === "host_pinned" ? e.blocks.length : 0),
    0,
  );
}

/** Starts a long greedy request and reads it up to `read` tokens; the rest stays unread. */
async function startLong(engine: LlamaCppEngine, tokenIds: number[], maxTokens: number, read: number) {
  const stream = engine.generate(greedy(tokenIds, maxTokens), { signal: new AbortController().signal });
  const tokens: number[] = [];
  while (tokens.length < read) {
    const item = await stream.next();
    assert.ok(!item.done && item.value.type === "token-delta", "the request is still decoding");
    tokens.push(...item.value.tokenIds);
  }
  const finish = async (): Promise<{ tokens: number[]; end: RequestEnd }> => {
    for await (const item of { [Symbol.asyncIterator]: () => stream }) {
      if (item.type === "token-delta") tokens.push(...item.tokenIds);
      else return { tokens, end: item };
    }
    assert.fail("the stream ended without a request-end");
  };
  return { finish };
}

for (const timing of ["as-filled", "at-end"] as const) {
  test(`--kv-offload ${timing}: a prompt ${timing === "as-filled" ? "is" : "is not"} on the host tier while its request decodes, for a second request on another sequence`, async () => {
    const engine = await engineWith({ hostBytes: 64 * 1024 * 1024, offload: timing }, new PrometheusMeter(), 2);
    try {
      const long = await startLong(engine, prompt, 200, 1);
      const promptBlocks = Math.floor(300 / BLOCK);
      if (timing === "as-filled") {
        await until(
          "the prompt's blocks on the host tier",
          async () => hostBlocks(engine),
          (n) => n >= promptBlocks,
        );
      }
      assert.equal(hostBlocks(engine), timing === "as-filled" ? promptBlocks : 0, "host blocks while the first request decodes");
      // The first request holds its sequence: the second gets the other one, which holds nothing.
      const second = await run(engine, prompt);
      assert.deepEqual(second.tokens, recomputed, "same greedy tokens as recomputing");
      assert.equal(second.end.cachedTokens, timing === "as-filled" ? reusable : 0);
      assert.equal(second.end.hostCachedTokens, timing === "as-filled" ? reusable : undefined);
      const first = await long.finish();
      assert.deepEqual(first.tokens.slice(0, 16), recomputed, "copying blocks down changes no token");
      assert.equal(first.end.completionTokens, 200);
      // At the end: every complete block of 300 prompt tokens and 199 evaluated generated ones.
      assert.equal(hostBlocks(engine), Math.floor((300 + 199) / BLOCK));
    } finally {
      await engine.close();
    }
  });
}

test("--kv-offload as-filled copies decoded blocks down each time the sequence doubles its blocks", async () => {
  const engine = await engineWith({ hostBytes: 64 * 1024 * 1024 });
  try {
    // 40 prompt tokens: 2 complete blocks copied once the prompt is evaluated; the next copy
    // starts once 4 blocks (64 tokens) are evaluated, the one after at 8 (128).
    const long = await startLong(engine, prompt.slice(0, 40), 120, 30);
    await until(
      "four blocks on the host tier",
      async () => hostBlocks(engine),
      (n) => n >= 4,
    );
    assert.equal(hostBlocks(engine), 4, "the copy at 4 blocks, before the one at 8");
    const done = await long.finish();
    assert.equal(done.end.completionTokens, 120);
    // 40 + 119 evaluated tokens: 9 complete blocks by the end.
    assert.equal(hostBlocks(engine), Math.floor((40 + 119) / BLOCK));
  } finally {
    await engine.close();
  }
});

test("a caller that stops reading while its prompt is being copied down frees the sequence after the copy", async () => {
  const engine = await engineWith({ hostBytes: 64 * 1024 * 1024 });
  try {
    const stream = engine.generate(greedy(prompt, 200), { signal: new AbortController().signal });
    const first = await stream.next();
    assert.ok(!first.done && first.value.type === "token-delta");
    // The prompt's copy started with the first token; stopping now unwinds while it may still run.
    await stream.return(undefined);
    assert.equal(hostBlocks(engine), Math.floor(300 / BLOCK), "the prompt's blocks were copied before the sequence was freed");
    // The engine's only sequence serves the next request; the prompt comes back from the device.
    const next = await run(engine, prompt);
    assert.deepEqual(next.tokens, recomputed);
    assert.equal(next.end.cachedTokens, 299);
  } finally {
    await engine.close();
  }
});
