import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { GenerateRequest, GenerateResponse, KvEvent, RequestEnd } from "../../protocol/index.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { LlamaCppEngine } from "./llamacpp-engine.js";

let engine: LlamaCppEngine;
let tokenizer: GgufTokenizer;

before(async () => {
  const path = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-llama-")));
  engine = await LlamaCppEngine.create({ modelPath: path, sequences: 4, contextSizePerSequence: 512 });
  tokenizer = await GgufTokenizer.load(path);
});
after(() => engine.close());

function request(prompt: string, overrides: Partial<GenerateRequest> = {}): GenerateRequest {
  return {
    type: "generate-request",
    requestId: "r",
    model: "tiny",
    tokenIds: tokenizer.encode(prompt),
    sampling: { temperature: 0 },
    maxTokens: 12,
    ...overrides,
  };
}

async function collect(
  req: GenerateRequest,
  signal = new AbortController().signal,
): Promise<{ tokens: number[]; end: RequestEnd }> {
  const tokens: number[] = [];
  let last: GenerateResponse | undefined;
  for await (const item of engine.generate(req, { signal })) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
    last = item;
  }
  assert.equal(last?.type, "request-end");
  return { tokens, end: last as RequestEnd };
}

test("greedy decoding is deterministic and stops at max_tokens with finish length", async () => {
  const a = await collect(request("The quick brown fox"));
  const b = await collect(request("The quick brown fox"));
  assert.equal(a.tokens.length, 12);
  assert.equal(a.end.finishReason, "length");
  assert.deepEqual(a.tokens, b.tokens);
});

// llama.cpp on the CPU is not batch-invariant: prompts prefilled in one batch may now and then take
// another greedy path than each alone (docs/benchmarks.md, "Batch invariance"), so this test checks
// that the requests ran side by side and each got its own complete answer, not token equality.
test("concurrent requests run side by side on the context's sequences and each completes", async () => {
  const prompts = ["Hello world", "What is the capital of France?", "Tell me a story", "Numbers like 42"];
  let mostActive = 0;
  const together = await Promise.all(
    prompts.map(async (p) => {
      const tokens: number[] = [];
      let last: GenerateResponse | undefined;
      for await (const item of engine.generate(request(p), { signal: new AbortController().signal })) {
        if (item.type === "token-delta") tokens.push(...item.tokenIds);
        mostActive = Math.max(mostActive, engine.load().activeRequests);
        last = item;
      }
      return { tokens, end: last };
    }),
  );
  assert.equal(mostActive, prompts.length);
  for (const { tokens, end } of together) {
    assert.equal(end?.type, "request-end");
    assert.equal((end as RequestEnd).finishReason, "length");
    assert.equal(tokens.length, 12);
  }
  assert.equal(engine.load().activeRequests, 0);
});

test("more requests than sequences wait their turn and all complete", async () => {
  const results = await Promise.all(Array.from({ length: 7 }, (_, i) => collect(request(`request number ${i}`))));
  assert.ok(results.every((r) => r.end.finishReason === "length" && r.tokens.length === 12));
});

test("a prompt that extends a cached one reuses its prefix", async () => {
  const base = "Write a poem about the ocean. The ocean is deep and blue";
  await collect(request(base));
  const { end } = await collect(request(`${base}, the waves come in and out`));
  assert.ok(end.cachedTokens >= tokenizer.encode(base).length - 1, `cached ${end.cachedTokens}`);
});

test("sampling with a seed is reproducible and differs from greedy", async () => {
  const sampled = { temperature: 1.5, topP: 0.95, seed: 7 };
  const a = await collect(request("Once upon a time", { sampling: sampled, maxTokens: 20 }));
  const b = await collect(request("Once upon a time", { sampling: sampled, maxTokens: 20 }));
  const greedy = await collect(request("Once upon a time", { maxTokens: 20 }));
  assert.deepEqual(a.tokens, b.tokens);
  assert.notDeepEqual(a.tokens, greedy.tokens);
});

test("a JSON schema constraint yields JSON that matches the schema", async () => {
  const schema = {
    type: "object",
    properties: { name: { type: "string" }, age: { type: "number" } },
    required: ["name", "age"],
  };
  const { tokens, end } = await collect(
    request("Answer in JSON", {
      constraint: { type: "json_schema", schema },
      maxTokens: 200,
      sampling: { temperature: 0.7, seed: 3 },
    }),
  );
  assert.equal(end.finishReason, "stop");
  const value = JSON.parse(tokenizer.decode(tokens)) as { name: unknown; age: unknown };
  assert.equal(typeof value.name, "string");
  assert.equal(typeof value.age, "number");
});

test("aborting stops generation with finish cancelled", async () => {
  const controller = new AbortController();
  const tokens: number[] = [];
  let last: GenerateResponse | undefined;
  for await (const item of engine.generate(request("Tell me a story", { maxTokens: 400, ignoreEos: true }), {
    signal: controller.signal,
  })) {
    if (item.type === "token-delta") {
      tokens.push(...item.tokenIds);
      if (tokens.length === 3) controller.abort();
    }
    last = item;
  }
  assert.equal(last?.type === "request-end" && last.finishReason, "cancelled");
  assert.ok(tokens.length <= 4);
});

test("publishes stored KV events for the prompt's full blocks", async () => {
  const events: KvEvent[] = [];
  const stop = engine.onKvEvents((batch) => events.push(...batch));
  const prompt = "A request arrives at the frontend, which applies the chat template and turns the text into tokens.";
  await collect(request(prompt, { maxTokens: 2 }));
  stop();
  const stored = events.flatMap((e) => (e.type === "kv-block-stored" ? e.blocks : []));
  assert.ok(stored.length > 0 && stored.length <= Math.floor(tokenizer.encode(prompt).length / 16));
});

test("a prompt as long as the context is refused with PROMPT_TOO_LONG", async () => {
  await assert.rejects(
    collect(request("x", { tokenIds: new Array(600).fill(65) })),
    (e: unknown) => (e as { code?: string }).code === "PROMPT_TOO_LONG",
  );
});

// Regression: a caller that read the request-end but never resumed the stream kept its sequence
// busy, and after `sequences` such requests every later request waited forever.
test("a caller that abandons the stream after request-end does not hold a sequence", async () => {
  for (let i = 0; i < 6; i++) {
    const iterator = engine
      .generate(request(`abandoned ${i}`, { maxTokens: 2 }), { signal: new AbortController().signal })
      [Symbol.asyncIterator]();
    for (;;) {
      const { value } = await iterator.next();
      if (value?.type === "request-end") break;
    }
  }
  assert.equal(engine.load().activeRequests, 0);
  const { end } = await collect(request("still served", { maxTokens: 2 }));
  assert.ok(["stop", "length"].includes(end.finishReason));
});

test("a frequency penalty changes a repetitive greedy continuation", async () => {
  const plain = await collect(request("Hello world, the quick brown fox", { maxTokens: 30 }));
  const penalised = await collect(
    request("Hello world, the quick brown fox", {
      maxTokens: 30,
      sampling: { temperature: 0, frequencyPenalty: 2, presencePenalty: 2 },
    }),
  );
  const distinct = (tokens: number[]) => new Set(tokens).size;
  assert.notDeepEqual(penalised.tokens, plain.tokens);
  assert.ok(distinct(penalised.tokens) > distinct(plain.tokens), `${distinct(penalised.tokens)} vs ${distinct(plain.tokens)}`);
});

test("the KV dump lists what the sequences cache, as the stored events did", async () => {
  const events: KvEvent[] = [];
  const stop = engine.onKvEvents((batch) => events.push(...batch));
  // A prompt no other test sends, 100 tokens long: six full blocks of 16 are new to the cache.
  const tokenIds = Array.from({ length: 100 }, (_, i) => 40 + ((i * 13) % 150));
  await collect(request("", { tokenIds, maxTokens: 1 }));
  stop();
  const stored = events.flatMap((e) => (e.type === "kv-block-stored" ? e.blocks.map((b) => b.blockHash) : []));
  // Regression: with no stored event the loop below asserted nothing and the test could not fail.
  assert.ok(stored.length >= 6, `the request stored its prompt's blocks (${stored.length} stored)`);
  const dumped = new Set(
    engine.dumpKvEvents().flatMap((e) => (e.type === "kv-block-stored" ? e.blocks.map((b) => b.blockHash) : [])),
  );
  for (const hash of stored) assert.ok(dumped.has(hash), `block ${hash} is in the dump`);
});
