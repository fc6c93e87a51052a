import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI, { NotFoundError } from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// `armature serve` (llamacpp engine, generated tiny model) under a name with a slash, as Hugging
// Face names are: OpenAI's Retrieve model through the official client, and vLLM's /tokenize and
// /detokenize against what the completion routes serve.
let server: ServeProcess;
let client: OpenAI;
const MODEL = "org/armature-tiny";

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256", "--model-name", MODEL], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test("GET /v1/models/{id} answers the model object a list entry has, and 404 model_not_found for others", async () => {
  const model = await client.models.retrieve(MODEL);
  assertMatchesSchema("Model", model);
  const listed = (await client.models.list()).data;
  assert.deepEqual({ ...model }, { ...listed[0] });
  assert.equal(model.id, MODEL);
  // Unencoded, the slash is part of the path; the id is everything after /v1/models/.
  const raw = await fetch(`${server.url}/v1/models/${MODEL}`);
  assert.deepEqual(await raw.json(), { ...model });

  const missing = await client.models.retrieve("no/such-model").catch((e: unknown) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "model_not_found");
  assert.equal(missing.param, "model");
  assert.equal(missing.message, "404 The model 'no/such-model' does not exist");
  const body = await (await fetch(`${server.url}/v1/models/nope`)).json();
  assertMatchesSchema("ErrorResponse", body);
  assert.equal((await fetch(`${server.url}/v1/models/x`, { method: "DELETE" })).status, 405);
});

test("a prompt tokenized and detokenized comes back as it was, and counts as a completion counts it", async () => {
  const prompt = "The quick brown fox, naïve café — 東京 🦊";
  const tokenized = await post("/tokenize", { model: MODEL, prompt });
  assert.equal(tokenized.status, 200, JSON.stringify(tokenized.json));
  const tokens = tokenized.json.tokens as number[];
  assert.equal(tokenized.json.count, tokens.length);
  assert.equal(tokenized.json.max_model_len, 256);
  assert.ok(tokens.length > 0 && tokens.every((t) => Number.isInteger(t)));
  assert.deepEqual(await post("/detokenize", { model: MODEL, tokens }), { status: 200, json: { prompt } });
  const completion = await client.completions.create({ model: MODEL, prompt, max_tokens: 1 });
  assert.equal(completion.usage?.prompt_tokens, tokens.length);
});

test("messages tokenize to the prompt tokens a chat completion reports, with or without the generation prompt", async () => {
  const messages = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hello there" },
  ] as const;
  const chat = await client.chat.completions.create({ model: MODEL, messages: [...messages], max_tokens: 1 });
  const withPrompt = await post("/tokenize", { model: MODEL, messages });
  assert.equal(withPrompt.status, 200, JSON.stringify(withPrompt.json));
  assert.equal(withPrompt.json.count, chat.usage?.prompt_tokens);
  const withoutPrompt = await post("/tokenize", { model: MODEL, messages, add_generation_prompt: false });
  const shorter = withoutPrompt.json.tokens as number[];
  assert.ok(shorter.length < (withPrompt.json.count as number));
  assert.deepEqual(shorter, (withPrompt.json.tokens as number[]).slice(0, shorter.length));
});

test("tokenize and detokenize refuse by name what they do not serve, and 404 an unknown model", async () => {
  const refused = await post("/tokenize", { model: MODEL, prompt: "hi", add_special_tokens: true });
  assert.equal(refused.status, 400);
  const error = refused.json.error as { message: string; type: string; param: string; code: string };
  assert.deepEqual(
    [error.type, error.param, error.code],
    ["invalid_request_error", "add_special_tokens", "unsupported_parameter"],
  );
  assert.match(error.message, /'add_special_tokens' is not supported/);
  assert.equal((await post("/tokenize", { model: MODEL, prompt: "hi", add_special_tokens: false })).status, 200);
  const unknown = await post("/tokenize", { model: MODEL, prompt: "hi", min_tokens: 1 });
  assert.deepEqual([unknown.status, (unknown.json.error as { param: string }).param], [400, "min_tokens"]);
  const outside = await post("/detokenize", { model: MODEL, tokens: [1, 10_000_000] });
  assert.deepEqual([outside.status, (outside.json.error as { param: string }).param], [400, "tokens"]);
  const malformed = await post("/tokenize", "{not json");
  assert.equal(malformed.status, 400);
  for (const [path, body] of [
    ["/tokenize", { model: "nope", prompt: "hi" }],
    ["/detokenize", { model: "nope", tokens: [1] }],
  ] as const) {
    const missing = await post(path, body);
    assert.equal(missing.status, 404, path);
    assert.equal((missing.json.error as { code: string }).code, "model_not_found", path);
  }
});
