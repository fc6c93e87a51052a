import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type GenerateRequest, type GenerateResponse, hashBlocks, type KvEvent } from "../../protocol/index.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { buildTinyLora } from "../tiny-model/tiny-lora.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { LlamaCppEngine } from "./llamacpp-engine.js";

let engine: LlamaCppEngine;
let tokenizer: GgufTokenizer;
let modelPath: string;
let riverPath: string;
const events: KvEvent[] = [];

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-lora-"));
  modelPath = await ensureTinyModel(dir);
  const seaPath = join(dir, "sea.gguf");
  riverPath = join(dir, "river.gguf");
  await writeFile(seaPath, buildTinyLora());
  await writeFile(riverPath, buildTinyLora({ word: " river" }));
  engine = await LlamaCppEngine.create({
    modelPath,
    sequences: 2,
    contextSizePerSequence: 256,
    loras: [{ name: "sea", path: seaPath }],
    maxLoras: 1,
  });
  engine.onKvEvents((batch) => events.push(...batch));
  tokenizer = await GgufTokenizer.load(modelPath);
});
after(() => engine.close());

const PROMPT = "<|im_start|>user\nTell me about the harbour.<|im_end|>\n<|im_start|>assistant\n";
const OTHER_PROMPT = PROMPT.replace("harbour", "river mouth and the old stone bridge");

function request(lora?: string, prompt = PROMPT): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model: "tiny",
    ...(lora === undefined ? {} : { lora }),
    tokenIds: tokenizer.encode(prompt, { special: true }),
    sampling: { temperature: 0 },
    maxTokens: 8,
  };
}

async function text(req: GenerateRequest): Promise<string> {
  const tokens: number[] = [];
  for await (const item of engine.generate(req, { signal: new AbortController().signal }) as AsyncIterable<GenerateResponse>) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
  }
  return tokenizer.decode(tokens);
}

test("an adapter changes the greedy output to its word, and a request without it gets the base model's", async () => {
  const base = await text(request());
  assert.equal(await text(request("sea")), " sea".repeat(8));
  assert.notEqual(base, " sea".repeat(8));
  // The adapter's context does not touch the base model's sequences.
  assert.equal(await text(request()), base);
});

test("an adapter's KV blocks are announced under the adapter's seed, the base model's under the plain one", async () => {
  const prompt = OTHER_PROMPT;
  events.length = 0;
  await text(request("sea", prompt));
  const stored = events.flatMap((e) => (e.type === "kv-block-stored" ? e.blocks.map((b) => b.blockHash) : []));
  assert.ok(stored.includes(firstBlock(prompt, "sea")), "the adapter's first prompt block, hashed with its seed");
  assert.ok(!stored.includes(firstBlock(prompt)), "no block under the base model's hash");
});

function firstBlock(prompt: string, lora?: string): bigint {
  return hashBlocks(request(undefined, prompt).tokenIds, engine.info.blockSize, lora).sequence[0] as bigint;
}

test("adapters load and unload at run time; with --max-loras 1 a second adapter takes the first one's context", async () => {
  events.length = 0;
  await engine.adapters.add("river", riverPath, "lora_path");
  assert.deepEqual(engine.adapters.names(), ["sea", "river"]);
  assert.deepEqual(engine.adapters.residentNames(), ["river"]);
  const removed = events.flatMap((e) => (e.type === "kv-block-removed" ? e.blockHashes : []));
  assert.ok(removed.includes(firstBlock(OTHER_PROMPT, "sea")), "the evicted adapter's blocks leave the index");
  assert.equal(await text(request("sea")), " sea".repeat(8));
  assert.deepEqual(engine.adapters.residentNames(), ["sea"]);
  assert.equal(await text(request("river")), " river".repeat(8));
  assert.deepEqual(engine.adapters.residentNames(), ["river"]);

  await engine.adapters.remove("river");
  assert.deepEqual(engine.adapters.names(), ["sea"]);
  await assert.rejects(text(request("river")), { code: "MODEL_NOT_FOUND" });
  await assert.rejects(engine.adapters.remove("river"), { code: "MODEL_NOT_FOUND" });
});

test("a file that is not a LoRA adapter GGUF, or a name taken, is refused with the setting that named it", async () => {
  await assert.rejects(engine.adapters.add("model", modelPath, "--lora model=x"), (error: Error & { code?: string }) => {
    assert.equal(error.code, "CONFIG_INVALID");
    assert.match(error.message, /^--lora model=x: .* is not a LoRA adapter GGUF \(no general\.type;/);
    return true;
  });
  const junk = join(await mkdtemp(join(tmpdir(), "armature-lora-")), "junk.gguf");
  await writeFile(junk, "not a gguf");
  await assert.rejects(engine.adapters.add("junk", junk, "lora_path"), {
    code: "CONFIG_INVALID",
    message: /^lora_path: cannot read .*junk\.gguf as a GGUF file/,
  });
  await assert.rejects(engine.adapters.add("sea", riverPath, "lora_path"), /an adapter named 'sea' is served already/);
  assert.deepEqual(engine.adapters.names(), ["sea"]);
});

test("an adapter request cannot be split into prefill and decode: it is refused by name", async () => {
  await assert.rejects(
    engine.prefill(request("sea"), { signal: new AbortController().signal, exportPath: join(tmpdir(), "unused") }),
    { code: "NOT_SUPPORTED", message: /LoRA adapter/ },
  );
});
