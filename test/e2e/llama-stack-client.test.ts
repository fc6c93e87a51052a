import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import LlamaStackClient, { APIError } from "llama-stack-client";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { specSchemas } from "../helpers/spec-schemas.js";

// The official llama-stack-client (0.7) against `armature serve` (llamacpp, the generated tiny
// model, an API key): models and chat, each answer checked against Llama Stack v0.7.1's spec.
const llamaStack = specSchemas(
  fileURLToPath(new URL("../fixtures/llama-stack/llama-stack-v0.7.1-subset.openapi.json", import.meta.url)),
);
const MODEL = "armature-tiny";
const KEY = "llama-stack-test-key";
let server: ServeProcess;
let client: LlamaStackClient;

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256", "--api-key", KEY], { ARMATURE_CACHE_DIR: cacheDir });
  client = new LlamaStackClient({ baseURL: server.url, apiKey: KEY, maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

test("models.list and models.retrieve give the served model in Llama Stack's shapes", async () => {
  const models = await client.models.list();
  assert.deepEqual(
    models.map((m) => m.id),
    [MODEL],
  );
  const raw = await (await fetch(`${server.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } })).json();
  llamaStack("OpenAIListModelsResponse", raw);

  const model = await client.models.retrieve(MODEL);
  llamaStack("Model", model);
  assert.equal(model.identifier, MODEL);
  assert.equal(model.model_type, "llm");

  // Started without --grpc-port: no gRPC server, and /health does not name one.
  const health = (await (await fetch(`${server.url}/health`)).json()) as Record<string, unknown>;
  assert.equal(health.status, "healthy");
  assert.equal("grpc_port" in health, false);

  const missing = await client.models.retrieve("no-such-model").catch((e: unknown) => e);
  assert.ok(missing instanceof APIError, String(missing));
  assert.equal(missing.status, 404);
});

test("chat.completions.create answers whole and streamed, conforming to OpenAIChatCompletion(Chunk)", async () => {
  const messages = [{ role: "user" as const, content: "Tell me a story" }];
  const whole = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 0 });
  llamaStack("OpenAIChatCompletion", whole);
  const text = whole.choices[0]?.message.content;
  assert.equal(typeof text, "string");
  assert.ok((text as string).length > 0);

  const stream = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, temperature: 0, stream: true });
  let streamed = "";
  const finishes: string[] = [];
  for await (const chunk of stream) {
    llamaStack("OpenAIChatCompletionChunk", chunk);
    streamed += chunk.choices[0]?.delta.content ?? "";
    const finish = chunk.choices[0]?.finish_reason;
    if (finish) finishes.push(finish);
  }
  // Greedy decoding: the stream says what the whole answer said.
  assert.equal(streamed, text);
  assert.deepEqual(finishes, [whole.choices[0]?.finish_reason]);
});

test("completions.create answers as Llama Stack's OpenAICompletion", async () => {
  const completion = await client.completions.create({ model: MODEL, prompt: "Once upon a time", max_tokens: 5 });
  llamaStack("OpenAICompletion", completion);
  assert.equal(completion.choices.length, 1);
});

test("errors reach the client as APIError with their status", async () => {
  const refused = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 0 })
    .catch((e: unknown) => e);
  assert.ok(refused instanceof APIError, String(refused));
  assert.equal(refused.status, 400);
  assert.match(refused.message, /max_tokens/);

  const unauthorized = new LlamaStackClient({ baseURL: server.url, apiKey: "wrong", maxRetries: 0 });
  const denied = await unauthorized.models.list().catch((e: unknown) => e);
  assert.ok(denied instanceof APIError, String(denied));
  assert.equal(denied.status, 401);
});
