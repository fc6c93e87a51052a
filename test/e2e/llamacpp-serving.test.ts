import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { ensureTinyModel, LlamaCppEngine, loadTokenizer } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema, sseData } from "../helpers/openai-spec.js";

// `armature serve` with its defaults (llamacpp engine, generated tiny model), driven by the
// official openai client; every response and stream chunk is checked against the OpenAI spec.
let server: ServeProcess;
let client: OpenAI;
let cacheDir: string;
const MODEL = "armature-tiny";

before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

test("non-streaming chat completion conforms and names its worker and request", async () => {
  const { data, response } = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: "user", content: "Hello" }], max_tokens: 8, temperature: 0 })
    .withResponse();
  assertMatchesSchema("CreateChatCompletionResponse", data);
  assert.match(response.headers.get("x-request-id") ?? "", /.+/);
  assert.match(response.headers.get("x-armature-worker") ?? "", /^worker-/);
  assert.equal(data.choices[0]?.message.role, "assistant");
  assert.ok(data.usage && data.usage.completion_tokens <= 8 && data.usage.prompt_tokens > 0);
  assert.ok(["stop", "length"].includes(data.choices[0]?.finish_reason ?? ""));
});

test("streamed chat conforms chunk by chunk, with usage last and [DONE]", async () => {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "Tell me a story" }],
      max_tokens: 12,
      // Sampled tokens may hit end-of-sequence early; the count is what this test checks.
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  assert.match(res.headers.get("x-armature-worker") ?? "", /^worker-/);
  const events = sseData(await res.text());
  assert.equal(events.at(-1), "[DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown>);
  for (const c of chunks) assertMatchesSchema("CreateChatCompletionStreamResponse", c);
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1);
  const last = chunks.at(-1) as { choices: unknown[]; usage: { completion_tokens: number } };
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.completion_tokens, 12);
  for (const c of chunks.slice(0, -1)) assert.equal(c.usage, null);
});

test("the openai client iterates a stream and gets one finish reason", async () => {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Hi" }],
    max_tokens: 6,
    stream: true,
  });
  const finishes: string[] = [];
  for await (const chunk of stream) {
    const reason = chunk.choices[0]?.finish_reason;
    if (reason) finishes.push(reason);
  }
  assert.equal(finishes.length, 1);
});

test("streamed text equals the engine's tokens detokenized in one go", async () => {
  const prompt = [72, 101, 108, 108, 111, 44, 32, 119, 111, 114, 108, 100];
  const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 40, temperature: 0, stream: true });
  let streamed = "";
  for await (const chunk of stream) streamed += chunk.choices[0]?.text ?? "";
  const modelPath = await ensureTinyModel(cacheDir);
  const engine = await LlamaCppEngine.create({ modelPath, sequences: 4, contextSizePerSequence: 256 });
  const tokens: number[] = [];
  for await (const item of engine.generate(
    {
      type: "generate-request",
      requestId: "direct",
      model: MODEL,
      tokenIds: prompt,
      sampling: { temperature: 0 },
      maxTokens: 40,
    },
    { signal: new AbortController().signal },
  )) {
    if (item.type === "token-delta") tokens.push(...item.tokenIds);
  }
  await engine.close();
  const tokenizer = await loadTokenizer({ kind: "gguf", path: modelPath });
  assert.ok(tokens.length > 0);
  assert.equal(streamed, tokenizer.decode(tokens));
});

test("completions take a string prompt or token ids, streamed or not, and conform", async () => {
  const text = await client.completions.create({ model: MODEL, prompt: "The capital of France", max_tokens: 5 });
  assertMatchesSchema("CreateCompletionResponse", text);
  const ids = await client.completions.create({ model: MODEL, prompt: [1, 2, 3, 4], max_tokens: 5 });
  assertMatchesSchema("CreateCompletionResponse", ids);
  assert.equal(ids.usage?.prompt_tokens, 4, "token ids are used exactly as given");
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "Once upon", max_tokens: 4, stream: true }),
  });
  const events = sseData(await res.text());
  assert.equal(events.at(-1), "[DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as { choices: { finish_reason: string | null }[] });
  assertMatchesSchema("CreateCompletionResponse", chunks.at(-1));
  // The spec has no stream schema for legacy completions and reuses the response one, whose
  // finish_reason is a string; like the live API, chunks before the last carry null there.
  for (const chunk of chunks.slice(0, -1)) {
    assert.equal(chunk.choices[0]?.finish_reason, null);
    assertMatchesSchema("CreateCompletionResponse", {
      ...chunk,
      choices: chunk.choices.map((c) => ({ ...c, finish_reason: "stop" })),
    });
  }
});

test("a stop string ends the text right before it, with finish_reason stop", async () => {
  const request = { model: MODEL, prompt: "Hello world", max_tokens: 30, temperature: 0 } as const;
  const full = (await client.completions.create(request)).choices[0]?.text ?? "";
  const clean = full.replace(/\uFFFD/g, "");
  assert.ok(clean.length >= 8, `need some text to cut: ${JSON.stringify(full)}`);
  const at = full.indexOf(clean.slice(4, 7));
  const stop = full.slice(at, at + 3);
  const cut = await client.completions.create({ ...request, stop: [stop] });
  assert.equal(cut.choices[0]?.text, full.slice(0, full.indexOf(stop)));
  assert.equal(cut.choices[0]?.finish_reason, "stop");
});

test("response_format json_schema returns JSON matching the schema", async () => {
  const schema = {
    type: "object",
    properties: { city: { enum: ["Paris", "Rome", "Oslo"] }, population: { type: "integer" } },
    required: ["city", "population"],
  };
  const result = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Where?" }],
    max_tokens: 200,
    temperature: 0.5,
    seed: 1,
    response_format: { type: "json_schema", json_schema: { name: "place", schema } },
  });
  assert.equal(result.choices[0]?.finish_reason, "stop");
  const parsed = JSON.parse(result.choices[0]?.message.content ?? "") as { city: string; population: unknown };
  assert.ok(["Paris", "Rome", "Oslo"].includes(parsed.city));
  assert.equal(typeof parsed.population, "number");
});

test("models, health and live answer as documented", async () => {
  const models = await client.models.list();
  assert.deepEqual(
    models.data.map((m) => m.id),
    [MODEL],
  );
  assertMatchesSchema("ListModelsResponse", await (await fetch(`${server.url}/v1/models`)).json());
  const health = (await (await fetch(`${server.url}/health`)).json()) as {
    status: string;
    instances: { id: string; role: string; model: string; engine: string; backend: string; threads: number }[];
  };
  assert.equal(health.status, "healthy");
  assert.deepEqual(
    health.instances.map((i) => [i.role, i.model, i.engine]),
    [["aggregated", MODEL, "llamacpp"]],
  );
  // Which llama.cpp build runs (--gpu auto: a GPU build only where this machine has a GPU).
  assert.ok(["cpu", "cuda", "vulkan"].includes(health.instances[0]?.backend ?? ""), JSON.stringify(health));
  assert.ok(Number.isInteger(health.instances[0]?.threads) && (health.instances[0]?.threads ?? 0) >= 1);
  assert.deepEqual(await (await fetch(`${server.url}/live`)).json(), { status: "live" });
});
