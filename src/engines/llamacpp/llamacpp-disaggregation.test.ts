import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { GenerateRequest, GenerateResponse } from "../../protocol/index.js";
import type { ImportedKv } from "../engine.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { LlamaCppEngine } from "./llamacpp-engine.js";

// One engine prefills and exports, another imports and decodes, a third serves aggregated: the
// greedy tokens must be the same.
let prefill: LlamaCppEngine;
let decode: LlamaCppEngine;
let aggregated: LlamaCppEngine;
let tokenizer: GgufTokenizer;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "armature-disagg-"));
  const path = await ensureTinyModel(dir);
  const options = { modelPath: path, sequences: 4, contextSizePerSequence: 512 };
  [prefill, decode, aggregated] = await Promise.all([
    LlamaCppEngine.create(options),
    LlamaCppEngine.create(options),
    LlamaCppEngine.create(options),
  ]);
  tokenizer = await GgufTokenizer.load(path);
});
after(async () => {
  await Promise.all([prefill.close(), decode.close(), aggregated.close()]);
  await rm(dir, { recursive: true, force: true });
});

function request(prompt: string, maxTokens = 16): GenerateRequest {
  return {
    type: "generate-request",
    requestId: prompt,
    model: "tiny",
    tokenIds: tokenizer.encode(prompt),
    sampling: { temperature: 0 },
    maxTokens,
  };
}

async function tokensOf(stream: AsyncIterable<GenerateResponse>): Promise<number[]> {
  const tokens: number[] = [];
  for await (const item of stream) if (item.type === "token-delta") tokens.push(...item.tokenIds);
  return tokens;
}

async function disaggregated(req: GenerateRequest, file: string): Promise<number[]> {
  const signal = new AbortController().signal;
  const result = await prefill.prefill(req, { signal, exportPath: file });
  assert.ok(result.firstToken !== undefined && result.kv?.format === "llamacpp-sequence-state");
  const importedKv: ImportedKv = { format: "llamacpp-sequence-state", path: file, firstToken: result.firstToken };
  return tokensOf(decode.generate(req, { signal, importedKv }));
}

test("prefill on one engine and decode on another give the aggregated greedy tokens", async () => {
  const prompts = ["Once upon a time", "The capital of France is", "1, 2, 3, 4,", "Hello there, how are you today?"];
  for (const [i, prompt] of prompts.entries()) {
    const req = request(prompt);
    const expected = await tokensOf(aggregated.generate(req, { signal: new AbortController().signal }));
    const file = join(dir, `state-${i}.bin`);
    assert.deepEqual(await disaggregated(req, file), expected, prompt);
  }
});

test("an imported state decodes identically while other sequences decode beside it", async () => {
  const background = ["Lorem ipsum dolor sit amet", "Tell me about the sea"].map((p) =>
    tokensOf(decode.generate(request(p, 120), { signal: new AbortController().signal })),
  );
  const req = request("The quick brown fox jumps over");
  const expected = await tokensOf(aggregated.generate(req, { signal: new AbortController().signal }));
  assert.deepEqual(await disaggregated(req, join(dir, "busy.bin")), expected);
  await Promise.all(background);
});

test("a state that does not hold the prompt is refused with a retryable TRANSFER_FAILED", async () => {
  const file = join(dir, "other.bin");
  const other = await prefill.prefill(request("Something else entirely"), {
    signal: new AbortController().signal,
    exportPath: file,
  });
  const importedKv: ImportedKv = { format: "llamacpp-sequence-state", path: file, firstToken: other.firstToken ?? 0 };
  await assert.rejects(
    tokensOf(decode.generate(request("Not the same prompt"), { signal: new AbortController().signal, importedKv })),
    {
      code: "TRANSFER_FAILED",
    },
  );
  // The engine keeps serving after the refusal.
  assert.equal((await tokensOf(decode.generate(request("Still fine?", 4), { signal: new AbortController().signal }))).length, 4);
});

test("a missing or garbage state file fails the import without breaking the engine", async () => {
  const garbage = join(dir, "garbage.bin");
  await writeFile(garbage, Buffer.from("not a llama.cpp state"));
  for (const path of [join(dir, "missing.bin"), garbage]) {
    assert.equal(existsSync(path), path === garbage);
    await assert.rejects(
      tokensOf(
        decode.generate(request("Hello"), {
          signal: new AbortController().signal,
          importedKv: { format: "llamacpp-sequence-state", path, firstToken: 5 },
        }),
      ),
    );
  }
  assert.equal((await tokensOf(decode.generate(request("Hello", 4), { signal: new AbortController().signal }))).length, 4);
});

test("a state file with the right header but a truncated body fails the import and the engine recovers", async () => {
  const req = request("Truncated states are refused");
  const file = join(dir, "truncated.bin");
  const result = await prefill.prefill(req, { signal: new AbortController().signal, exportPath: file });
  const bytes = await readFile(file);
  await writeFile(file, bytes.subarray(0, 12 + req.tokenIds.length * 4 + 40));
  const importedKv: ImportedKv = { format: "llamacpp-sequence-state", path: file, firstToken: result.firstToken ?? 0 };
  await assert.rejects(tokensOf(decode.generate(req, { signal: new AbortController().signal, importedKv })), {
    code: "TRANSFER_FAILED",
  });
  const expected = await tokensOf(aggregated.generate(req, { signal: new AbortController().signal }));
  assert.deepEqual(await tokensOf(decode.generate(req, { signal: new AbortController().signal })), expected);
});
