import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { PrometheusMeter, silentLogger } from "../../observability/index.js";
import type { GenerateRequest, GenerateResponse, RequestEnd } from "../../protocol/index.js";
import type { ImportedKv } from "../engine.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { LlamaCppEngine, type LlamaCppEngineOptions } from "./llamacpp-engine.js";

// A decode worker that holds the first blocks of a prompt (on its device, or only in its KV tiers)
// gets the rest of the prompt's state from the prefill worker: fewer bytes, the same greedy tokens.
const BLOCK = 16;
let dir: string;
let modelPath: string;
let shared: number[];
let first: number[];
let second: number[];
let expected: number[];
const engines: LlamaCppEngine[] = [];

async function engine(options: Partial<LlamaCppEngineOptions> = {}): Promise<LlamaCppEngine> {
  const created = await LlamaCppEngine.create({
    modelPath,
    sequences: 2,
    contextSizePerSequence: 512,
    blockSize: BLOCK,
    ...options,
  });
  engines.push(created);
  return created;
}

const request = (tokenIds: number[], maxTokens = 16): GenerateRequest => ({
  type: "generate-request",
  requestId: "r",
  model: "tiny",
  tokenIds,
  sampling: { temperature: 0 },
  maxTokens,
  ignoreEos: true,
});

async function run(stream: AsyncIterable<GenerateResponse>): Promise<{ tokens: number[]; end: RequestEnd }> {
  const tokens: number[] = [];
  let end: RequestEnd | undefined;
  for await (const item of stream) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    else end = item;
  }
  return { tokens, end: end as RequestEnd };
}

const signal = (): AbortSignal => new AbortController().signal;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "armature-partial-handoff-"));
  modelPath = await ensureTinyModel(dir);
  const tokenizer = await GgufTokenizer.load(modelPath);
  const text = (seed: string) => Array.from({ length: 30 }, (_, i) => `${seed} line ${i}.`).join(" ");
  // Two prompts that share 170 tokens: 10 whole blocks of 16 and 10 tokens of the 11th.
  shared = tokenizer.encode(text("The shared system prompt says")).slice(0, 170);
  first = [...shared, ...tokenizer.encode(text("A first question")).slice(0, 40)];
  second = [...shared, ...tokenizer.encode(text("A second, different question")).slice(0, 40)];
  assert.equal(second.length, 210);
  const reference = await engine({ sequences: 1 });
  expected = (await run(reference.generate(request(second), { signal: signal() }))).tokens;
  assert.equal(expected.length, 16);
});
after(async () => {
  await Promise.all(engines.map((e) => e.close()));
  await rm(dir, { recursive: true, force: true });
});

/** Prefills `second` for a decode worker said to hold `held` tokens; the export's path and result. */
async function prefillFor(prefill: LlamaCppEngine, held: number | undefined, name: string) {
  const path = join(dir, name);
  const result = await prefill.prefill(request(second, 1), { signal: signal(), exportPath: path, decodeHeldTokens: held });
  assert.equal(result.kv?.format, "llamacpp-sequence-state");
  assert.equal(result.firstToken, expected[0]);
  const importedKv: ImportedKv = {
    format: "llamacpp-sequence-state",
    path,
    firstToken: result.firstToken as number,
    fromToken: result.kv?.fromToken,
  };
  return { kv: result.kv, importedKv };
}

test("a decode engine holding the prompt's first blocks on its device loads only the rest, with the same greedy tokens", async (t) => {
  const prefill = await engine();
  const decode = await engine();
  // The decode engine served a prompt with the same first 170 tokens: its sequence keeps them.
  await run(decode.generate(request(first), { signal: signal() }));
  const whole = await prefillFor(prefill, undefined, "whole.state");
  // The router says 170 tokens; the export starts at the block boundary before them.
  const part = await prefillFor(prefill, 170, "part.state");
  assert.equal(whole.kv?.fromToken, undefined);
  assert.equal(part.kv?.fromToken, 160);
  assert.equal(part.kv?.wholeBytes, whole.kv?.bytes);
  // Header, shape key, 50 token ids and 50 cells of KV (2 layers, K and V rows of 128 bytes: 512 bytes a cell).
  const shapeKey = "ggsq3/vt0/k1:128,v1:128/k1:128,v1:128";
  assert.equal(decode.info.kvBytesPerToken, 512);
  assert.equal(part.kv?.bytes, 28 + shapeKey.length + 50 * (4 + 512));
  t.diagnostic(
    `KV moved for a 210-token prompt: whole state ${whole.kv?.bytes} bytes, from token 160 on ${part.kv?.bytes} bytes`,
  );
  const decoded = await run(decode.generate(request(second), { signal: signal(), importedKv: part.importedKv }));
  assert.deepEqual(decoded.tokens, expected);
  assert.equal(decoded.end.cachedTokens, second.length);
});

test("a decode engine holding them only in its host tier assembles them from there", async () => {
  const prefill = await engine();
  const meter = new PrometheusMeter();
  const kvbm = { settings: { hostBytes: 16 << 20 }, modelName: "tiny", workerLabel: "0", meter, logger: silentLogger };
  // One sequence: the unrelated prompt after the first one leaves nothing of it on the device.
  const decode = await engine({ sequences: 1, kvbm });
  await run(decode.generate(request(first), { signal: signal() }));
  await run(decode.generate(request([...first].reverse()), { signal: signal() }));
  const part = await prefillFor(prefill, 160, "tiered.state");
  assert.equal(part.kv?.fromToken, 160);
  const decoded = await run(decode.generate(request(second), { signal: signal(), importedKv: part.importedKv }));
  assert.deepEqual(decoded.tokens, expected);
  const onboarded = /armature_kvbm_onboard_blocks_total\{[^}]*from="host"[^}]*\} (\d+)/.exec(await meter.render());
  assert.equal(Number(onboarded?.[1]), 10, "the 10 blocks came from the host tier");
});

test("a decode engine that does not hold what the router said refuses the suffix, retryably, and still serves the prompt", async () => {
  const prefill = await engine();
  const decode = await engine();
  const part = await prefillFor(prefill, 160, "stale.state");
  await assert.rejects(run(decode.generate(request(second), { signal: signal(), importedKv: part.importedKv })), (error) => {
    assert.equal((error as { code?: string }).code, "TRANSFER_FAILED");
    assert.equal((error as { retryable?: boolean }).retryable, true);
    assert.match((error as Error).message, /no longer holds the prompt's first 160 tokens \(its sequence 0\)/);
    return true;
  });
  // A suffix for another prompt is refused too, even with the prefix held.
  await run(decode.generate(request(first), { signal: signal() }));
  const other = [...shared.slice(0, 160), ...second.slice(160).reverse()];
  await assert.rejects(run(decode.generate(request(other), { signal: signal(), importedKv: part.importedKv })), {
    code: "TRANSFER_FAILED",
  });
  assert.deepEqual((await run(decode.generate(request(second), { signal: signal() }))).tokens, expected);
});
