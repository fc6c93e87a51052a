import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { readGgufFileInfo } from "node-llama-cpp";
import OpenAI, { BadRequestError } from "openai";
import { ensureTinyModel } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// OpenAI's Create embeddings through the official client against `armature serve` on the generated
// tiny llama.cpp model. Expected sizes come from the GGUF itself (read by node-llama-cpp's reader),
// token counts from `POST /tokenize`, and the base64 layout from OpenAI's client, which decodes it.
const MODEL = "armature-tiny";
let server: ServeProcess;
let client: OpenAI;
let dimensions: number;
let vocabulary: number;
/** The context's size as the server reports it (`POST /tokenize`'s `max_model_len`). */
let context: number;
let cacheDir: string;

before(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "armature-embeddings-"));
  const gguf = await readGgufFileInfo(await ensureTinyModel(cacheDir));
  const metadata = gguf.metadata as unknown as Record<string, Record<string, unknown> | undefined>;
  dimensions = Number(metadata[String(metadata.general?.architecture)]?.embedding_length);
  vocabulary = (metadata.tokenizer?.ggml as { tokens?: unknown[] } | undefined)?.tokens?.length ?? 0;
  assert.ok(dimensions > 0 && vocabulary > 0);
  server = await startServe(["--context-size", "256", "--model-name", MODEL], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  context = (await tokenized("x")).max_model_len;
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function tokenized(prompt: string): Promise<{ tokens: number[]; max_model_len: number }> {
  const res = await fetch(`${server.url}/tokenize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt }),
  });
  return (await res.json()) as { tokens: number[]; max_model_len: number };
}

async function tokenize(prompt: string): Promise<number[]> {
  return (await tokenized(prompt)).tokens;
}

async function floats(input: string | string[] | number[] | number[][]): Promise<number[][]> {
  const response = await client.embeddings.create({ model: MODEL, input, encoding_format: "float" });
  return response.data.map((d) => d.embedding);
}

const norm = (v: readonly number[]): number => Math.hypot(...v);

async function refusal(body: Record<string, unknown>): Promise<BadRequestError> {
  const error = await client.embeddings.create({ model: MODEL, ...body } as never).catch((e: unknown) => e);
  assert.ok(error instanceof BadRequestError, `${JSON.stringify(body).slice(0, 80)}: ${String(error)}`);
  return error;
}

test("one text gives one unit-length vector of the model's size, and usage counts what /tokenize counts", async () => {
  const text = "The quick brown fox";
  const response = await client.embeddings.create({ model: MODEL, input: text, encoding_format: "float" });
  assertMatchesSchema("CreateEmbeddingResponse", response);
  assert.equal(response.object, "list");
  assert.equal(response.model, MODEL);
  assert.equal(response.data.length, 1);
  const [item] = response.data;
  assert.equal(item?.object, "embedding");
  assert.equal(item?.index, 0);
  assert.equal(item?.embedding.length, dimensions);
  assert.ok(Math.abs(norm(item?.embedding ?? []) - 1) < 1e-5, `norm ${norm(item?.embedding ?? [])}`);
  const count = (await tokenize(text)).length;
  assert.deepEqual(response.usage, { prompt_tokens: count, total_tokens: count });
});

test("a batch gives one vector per input, in input order, each the vector of that input alone", async () => {
  const texts = ["alpha beta", "gamma", "alpha beta", "a longer sentence about something else"];
  const response = await client.embeddings.create({ model: MODEL, input: texts, encoding_format: "float" });
  assertMatchesSchema("CreateEmbeddingResponse", response);
  assert.deepEqual(
    response.data.map((d) => d.index),
    [0, 1, 2, 3],
  );
  for (const [i, text] of texts.entries()) assert.deepEqual(response.data[i]?.embedding, (await floats(text))[0], text);
  // The same text twice: the same vector; different texts: different vectors.
  assert.deepEqual(response.data[0]?.embedding, response.data[2]?.embedding);
  assert.notDeepEqual(response.data[0]?.embedding, response.data[1]?.embedding);
  assert.notDeepEqual(response.data[1]?.embedding, response.data[3]?.embedding);
  let tokens = 0;
  for (const text of texts) tokens += (await tokenize(text)).length;
  assert.deepEqual(response.usage, { prompt_tokens: tokens, total_tokens: tokens });
});

test("token ids embed as the text they tokenize from, one array or a batch of arrays", async () => {
  const [first, second] = ["hello world", "goodbye"];
  const ids = [await tokenize(first as string), await tokenize(second as string)];
  assert.deepEqual(await floats(ids[0] as number[]), await floats(first as string));
  assert.deepEqual(await floats(ids), await floats([first as string, second as string]));
});

test("base64 carries the same float32 numbers: decoded by OpenAI's client by default, by hand when asked for", async () => {
  const texts = ["one", "two three"];
  const expected = await floats(texts);
  // Without encoding_format the client asks for base64 and decodes it (little-endian float32).
  const decoded = await client.embeddings.create({ model: MODEL, input: texts });
  assert.deepEqual(
    decoded.data.map((d) => d.embedding),
    expected,
  );
  const raw = await client.embeddings.create({ model: MODEL, input: texts, encoding_format: "base64" });
  for (const [i, item] of raw.data.entries()) {
    assert.equal(typeof item.embedding, "string");
    const bytes = Buffer.from(item.embedding as unknown as string, "base64");
    assert.equal(bytes.length, dimensions * 4);
    const vector = Array.from({ length: dimensions }, (_, k) => bytes.readFloatLE(k * 4));
    assert.deepEqual(vector, expected[i]);
  }
});

test("dimensions: the model's own size is served, any other is refused by name; user is accepted", async () => {
  const own = await client.embeddings.create({ model: MODEL, input: "x", dimensions, user: "u-1", encoding_format: "float" });
  assert.equal(own.data[0]?.embedding.length, dimensions);
  const shorter = await refusal({ input: "x", dimensions: dimensions - 1 });
  assert.equal(shorter.param, "dimensions");
  assert.equal(shorter.code, "unsupported_parameter");
  assert.match(shorter.message, new RegExp(`${dimensions} dimensions`));
  assert.equal((await refusal({ input: "x", dimensions: 0 })).param, "dimensions");
});

test("empty input, an empty string, ids outside the vocabulary and input past the context are refused naming input", async () => {
  for (const input of ["", [], [""], ["ok", ""], [[]], [1, -2], [[1], ["a"]], 7, null]) {
    const error = await refusal({ input });
    assert.equal(error.param, "input", JSON.stringify(input));
  }
  assert.equal((await refusal({})).param, "input");
  const outside = await refusal({ input: [1, vocabulary] });
  assert.equal(outside.param, "input");
  assert.match(outside.message, new RegExp(`token id ${vocabulary}`));
  const batchOutside = await refusal({ input: [[1], [vocabulary + 5]] });
  assert.match(batchOutside.message, /input 1 holds token id/);
  const longText = "word ".repeat(context);
  assert.ok((await tokenize(longText)).length >= context);
  const long = await refusal({ input: ["ok", longText] });
  assert.equal(long.param, "input");
  assert.equal(long.code, "context_length_exceeded");
  // As with a completion's prompt, an input may fill the context but for one token.
  const longIds = await refusal({ input: Array.from({ length: context }, () => 1) });
  assert.equal(longIds.code, "context_length_exceeded");
  assert.equal(longIds.param, "input");
  const fits = await floats(Array.from({ length: context - 1 }, () => 1));
  assert.equal(fits[0]?.length, dimensions);
});

test("other fields are refused by name: a wrong encoding_format, an unknown field", async () => {
  assert.equal((await refusal({ input: "x", encoding_format: "int8" })).param, "encoding_format");
  const unknown = await refusal({ input: "x", truncate: true });
  assert.equal(unknown.param, "truncate");
  assert.match(unknown.message, /Unrecognized request argument supplied: truncate/);
});

test("embeddings leave generation alone: a greedy completion is the same before and after", async () => {
  const complete = async (): Promise<string> =>
    (await client.completions.create({ model: MODEL, prompt: "Once upon", max_tokens: 8, temperature: 0 })).choices[0]?.text ??
    "";
  const before = await complete();
  await client.embeddings.create({ model: MODEL, input: ["Once upon", "a time"], encoding_format: "float" });
  assert.equal(await complete(), before);
});

test("embeddings and completions at once: each gets what it gets alone", async () => {
  const texts = ["first of many", "second of many", "third", "fourth one here"];
  const alone = await floats(texts);
  const prompts = ["Once upon", "The end of", "In a land"];
  // Completions one after another (a batch of one sequence each time), embeddings all at once beside them.
  const completeAll = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const prompt of prompts) {
      const completion = await client.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 });
      out.push(completion.choices[0]?.text ?? "");
    }
    return out;
  };
  const expected = await completeAll();
  const [vectors, completions] = await Promise.all([Promise.all(texts.map(async (t) => (await floats(t))[0])), completeAll()]);
  assert.deepEqual(vectors, alone);
  assert.deepEqual(completions, expected);
});

test("embeddings requests are counted in /metrics under their own endpoint", async () => {
  await client.embeddings.create({ model: MODEL, input: "counted" });
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /armature_frontend_requests_total\{[^}]*endpoint="embeddings"[^}]*status="success"[^}]*\} [1-9]/);
});

test("the mocker computes no embeddings: a 400 that names the model, the engine and the flag that serves them", async () => {
  const mocker = await startServe(["--engine", "mocker", "--model-name", "mocked"]);
  try {
    const mocked = new OpenAI({ baseURL: `${mocker.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const error = await mocked.embeddings.create({ model: "mocked", input: "hi" }).catch((e: unknown) => e);
    assert.ok(error instanceof BadRequestError, String(error));
    assert.equal(error.param, "model");
    assert.match(error.message, /model mocked is served by the mocker engine, which computes no embeddings/);
    assert.match(error.message, /--engine llamacpp/);
    // Its chat still works: the refusal is the route's, not the worker's state.
    const chat = await mocked.chat.completions.create({
      model: "mocked",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 2,
    });
    assert.equal(chat.choices.length, 1);
  } finally {
    assert.equal(await mocker.stop("SIGTERM"), 0, mocker.output());
  }
});

test("split prefill and decode: the prefill worker embeds, with the vectors an aggregated worker gives", async () => {
  const split = await startServe(["--context-size", "256", "--prefill", "1", "--decode", "1", "--model-name", MODEL], {
    ARMATURE_CACHE_DIR: cacheDir,
  });
  try {
    const health = (await (await fetch(`${split.url}/health`)).json()) as { instances: { id: string; role: string }[] };
    const prefill = health.instances.find((i) => i.role === "prefill");
    assert.ok(prefill, JSON.stringify(health));
    const splitClient = new OpenAI({ baseURL: `${split.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const texts = ["split roles", "same vectors"];
    for (let i = 0; i < 3; i++) {
      const { data, response } = await splitClient.embeddings
        .create({ model: MODEL, input: texts, encoding_format: "float" })
        .withResponse();
      assert.equal(response.headers.get("x-armature-worker"), prefill.id);
      assert.deepEqual(
        data.data.map((d) => d.embedding),
        await floats(texts),
      );
    }
  } finally {
    assert.equal(await split.stop("SIGTERM"), 0, split.output());
  }
});
