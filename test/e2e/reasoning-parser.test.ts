import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// `--reasoning-parser` on `armature serve` with the generated tiny llama.cpp model, beside the same
// model served without one. The tiny model never writes `</think>`, so to a thinking-model parser its
// whole answer is reasoning cut off before the end: `reasoning_content` holds what the plain server
// answers as `content`, and `content` is null. How markers split text is the parser's unit test.
let plain: ServeProcess;
let thinking: ServeProcess;
const MODEL = "armature-tiny";
const client = (server: ServeProcess) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
const ask = { model: MODEL, messages: [{ role: "user" as const, content: "Tell me a story" }], max_tokens: 24, temperature: 0 };

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-reasoning-"));
  [plain, thinking] = await Promise.all([
    startServe([], { ARMATURE_CACHE_DIR: cacheDir }),
    startServe(["--reasoning-parser", "deepseek_r1"], { ARMATURE_CACHE_DIR: cacheDir }),
  ]);
});

after(async () => {
  await Promise.all([plain?.stop(), thinking?.stop()]);
});

test("a whole answer: the text goes to reasoning_content, content is null, and the response still matches OpenAI's schema", async () => {
  const expected = (await client(plain).chat.completions.create(ask)).choices[0]?.message.content ?? "";
  assert.ok(expected.length > 0);
  const response = await client(thinking).chat.completions.create(ask);
  assertMatchesSchema("CreateChatCompletionResponse", response);
  const message = response.choices[0]?.message as { content: string | null; reasoning_content?: string };
  assert.deepEqual({ reasoning: message.reasoning_content, content: message.content }, { reasoning: expected, content: null });
});

test("a stream: reasoning_content deltas carry the text and no content delta does", async () => {
  const expected = (await client(plain).chat.completions.create(ask)).choices[0]?.message.content ?? "";
  const stream = await client(thinking).chat.completions.create({ ...ask, stream: true });
  let reasoning = "";
  let content = "";
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
    reasoning += delta?.reasoning_content ?? "";
    content += delta?.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.deepEqual({ reasoning, content }, { reasoning: expected, content: "" });
  assert.ok(finish === "stop" || finish === "length");
});

test("an answer under a grammar is not split: response_format json_object gives the same content as without the parser", async () => {
  const json = { ...ask, response_format: { type: "json_object" as const } };
  const expected = (await client(plain).chat.completions.create(json)).choices[0]?.message;
  const got = (await client(thinking).chat.completions.create(json)).choices[0]?.message as {
    content: string | null;
    reasoning_content?: string;
  };
  assert.equal(got.content, expected?.content);
  assert.equal(got.reasoning_content, undefined);
});

test("n > 1 and logprobs with the parser are refused by name; legacy completions are not split", async () => {
  for (const [extra, param] of [
    [{ n: 2 }, "n"],
    [{ logprobs: true }, "logprobs"],
  ] as const) {
    const res = await fetch(`${thinking.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...ask, ...extra }),
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, param);
  }
  const prompt = { model: MODEL, prompt: "The", max_tokens: 12, temperature: 0 };
  const a = await client(plain).completions.create(prompt);
  const b = await client(thinking).completions.create(prompt);
  assert.equal(b.choices[0]?.text, a.choices[0]?.text);
});

test("an unknown parser is refused at start, naming the flag and the choices", async () => {
  await assert.rejects(startServe(["--reasoning-parser", "o1"]), /--reasoning-parser.*deepseek_r1, qwen3/s);
});
