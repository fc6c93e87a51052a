import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import {
  buildTinyLora,
  buildTinyModel,
  connectLlamaServer,
  ensureTinyModel,
  hfEngineTokenizer,
  loadTokenizer,
} from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { freePort } from "../helpers/free-port.js";
import { type LlamaServer, startLlamaServer } from "../helpers/llama-server.js";
import { modelsWithParents } from "../helpers/lora-admin.js";
import { assertMatchesSchema, sseData } from "../helpers/openai-spec.js";
import { qwen3TokenizerDir, writeTokenizerFolderOf } from "../helpers/tokenizer-folders.js";
import { workersRefusal } from "../helpers/workers-refusal.js";

// Two unmodified llama-servers (llama.cpp's own, built by npm test's pretest from the source in
// node-llama-cpp) behind `armature serve --engine llama-server`, driven by the official openai
// client; the reference for every token is the same request sent to llama-server directly.

let model: string;
let seaPath: string;
let engines: LlamaServer[];
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny-v2";

before(async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-llama-server-"));
  model = await ensureTinyModel(dir);
  // The second llama-server loads the tiny model's adapter, served by its file's name: `sea`.
  seaPath = join(dir, "sea.gguf");
  await writeFile(seaPath, buildTinyLora());
  engines = await Promise.all([
    startLlamaServer({ model, contextPerSlot: 2048 }),
    startLlamaServer({ model, contextPerSlot: 2048, loras: [seaPath] }),
  ]);
  server = await startServe([
    "--engine",
    "llama-server",
    "--engine-url",
    engines[0]?.url as string,
    "--engine-url",
    engines[1]?.url as string,
    "--model",
    model,
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
  await Promise.all(engines.map((e) => e.stop()));
});

/** llama-server's own answer to a prompt of token ids, as a user calling it directly would ask. */
async function direct(url: string, prompt: readonly number[], maxTokens: number) {
  const response = await fetch(`${url}/completion`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, n_predict: maxTokens, temperature: 0, return_tokens: true, cache_prompt: false }),
  });
  assert.equal(response.status, 200);
  return (await response.json()) as { content: string; tokens: number[]; stop_type: string; tokens_predicted: number };
}

test("greedy completions through armature are llama-server's own, token for token", async () => {
  const tokenizer = await loadTokenizer({ kind: "gguf", path: model });
  const prompts = ["The quick brown fox", "Once upon a time there was", "Numbers: 1, 2, 3,", "Hello world, hello"];
  for (const text of prompts) {
    const prompt = tokenizer.encode(text);
    const reference = await direct(engines[0]?.url as string, prompt, 24);
    const response = await client.completions.create({ model: MODEL, prompt, max_tokens: 24, temperature: 0 });
    assertMatchesSchema("CreateCompletionResponse", response);
    assert.equal(response.choices[0]?.text, reference.content, `prompt ${JSON.stringify(text)}`);
    assert.equal(response.usage?.completion_tokens, reference.tokens_predicted);
    assert.equal(response.choices[0]?.finish_reason, reference.stop_type === "limit" ? "length" : "stop");
  }
});

test("health names each worker's engine and URL, and the router is KV-aware without KV events", async () => {
  const health = (await (await fetch(`${server.url}/health`)).json()) as {
    status: string;
    instances: { engine: string; backend: string; engine_url: string }[];
  };
  assert.equal(health.status, "healthy");
  assert.deepEqual(
    health.instances.map((i) => [i.engine, i.backend, i.engine_url]).sort(),
    engines.map((e) => ["llama-server", "llama-server", e.url]).sort(),
  );
});

test("a conversation's second turn goes to the llama-server that holds its prefix, which reports it cached", async () => {
  const system = `You are a careful assistant. ${"Answer briefly and plainly, and name your sources. ".repeat(12)}`;
  for (let conversation = 0; conversation < 4; conversation++) {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: "system", content: `${system} Conversation ${conversation}.` },
      { role: "user", content: `Tell me about topic ${conversation}.` },
    ];
    const first = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0 }).withResponse();
    const worker = first.response.headers.get("x-armature-worker");
    messages.push({ role: "assistant", content: first.data.choices[0]?.message.content ?? "" });
    messages.push({ role: "user", content: "And then?" });
    const second = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 8, temperature: 0 }).withResponse();
    assert.equal(second.response.headers.get("x-armature-worker"), worker, `conversation ${conversation}`);
    const cached = second.data.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    assert.ok(cached >= (first.data.usage?.prompt_tokens ?? 0) - 1, `cached ${cached} of ${second.data.usage?.prompt_tokens}`);
  }
});

test("what llama-server cannot do is refused by name, before any engine is asked", async () => {
  for (const [field, value] of [
    ["logprobs", 2],
    ["min_tokens", 4],
    ["stop_token_ids", [5]],
  ] as const) {
    const response = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "Hi", max_tokens: 4, [field]: value }),
    });
    assert.equal(response.status, 400, field);
    const body = (await response.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, field);
    assert.match(body.error.message, /llama-server workers/);
  }
});

/** llama-server's own count of the tokens it generated (its Prometheus `/metrics`). */
async function predictedTokens(engine: LlamaServer): Promise<number> {
  const text = await (await fetch(`${engine.url}/metrics`)).text();
  const match = /^llamacpp:tokens_predicted_total (\d+)/m.exec(text);
  assert.ok(match, text);
  return Number(match[1]);
}

test("a LoRA adapter llama-server loaded is served by name on that server only, as llama-server applies it itself", async () => {
  assert.deepEqual(await modelsWithParents(client), [
    [MODEL, null],
    ["sea", MODEL],
  ]);
  const tokenizer = await loadTokenizer({ kind: "gguf", path: model });
  const prompt = tokenizer.encode("The harbour at night");
  const { data, response } = await client.completions
    .create({ model: "sea", prompt, max_tokens: 8, temperature: 0 })
    .withResponse();
  const health = (await (await fetch(`${server.url}/health`)).json()) as { instances: { id: string; engine_url: string }[] };
  const servedBy = health.instances.find((i) => i.id === response.headers.get("x-armature-worker"))?.engine_url;
  assert.equal(servedBy, engines[1]?.url, "only the server that loaded the adapter serves it");
  // The reference: llama-server's own answer with its adapter turned on for the request.
  const reference = await fetch(`${engines[1]?.url}/completion`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ prompt, n_predict: 8, temperature: 0, cache_prompt: false, lora: [{ id: 0, scale: 1 }] }),
  });
  const expected = ((await reference.json()) as { content: string }).content;
  assert.equal(expected, " sea".repeat(8));
  assert.equal(data.choices[0]?.text, expected);
  assert.match(
    await workersRefusal([
      "--engine",
      "llama-server",
      "--engine-url",
      engines[0]?.url as string,
      "--model",
      model,
      "--lora",
      `sea=${seaPath}`,
    ]),
    /--lora sea=\S+sea\.gguf: no llama-server at --engine-url loaded that adapter/,
  );
});

test("a llama-server killed mid-stream: the stream finishes on the other one, every token counted once", async () => {
  const before = await Promise.all(engines.map(predictedTokens));
  const response = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      prompt: "Write a long story about the sea.",
      max_tokens: 1500,
      temperature: 0,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  assert.equal(response.status, 200);
  const worker = response.headers.get("x-armature-worker");
  const health = (await (await fetch(`${server.url}/health`)).json()) as { instances: { id: string; engine_url: string }[] };
  const victim = engines.find((e) => e.url === health.instances.find((i) => i.id === worker)?.engine_url);
  assert.ok(victim, `the stream's worker ${worker} drives one of the llama-servers`);
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const text = new TextDecoder().decode((await reader.read()).value);
  await victim.stop("SIGKILL");
  try {
    await survive(reader, text, victim, before);
  } finally {
    // The later tests need two servers, whatever this one found.
    engines[engines.indexOf(victim)] = await startLlamaServer({ model, contextPerSlot: 2048 });
  }
});

/** Reads the rest of a stream whose server `victim` was killed, and checks it finished elsewhere. */
async function survive(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: string,
  victim: LlamaServer,
  before: readonly number[],
): Promise<void> {
  let text = first;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  const events = sseData(text);
  assert.equal(events.at(-1), "[DONE]");
  const chunks = events
    .slice(0, -1)
    .map((e) => JSON.parse(e) as { choices: { finish_reason: string | null }[]; usage?: { completion_tokens: number } });
  assert.equal(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason, "length");
  assert.equal(chunks.at(-1)?.usage?.completion_tokens, 1500);
  // The survivor generated the rest: the stream really moved.
  const survivor = engines.find((e) => e !== victim) as LlamaServer;
  const generated = (await predictedTokens(survivor)) - (before[engines.indexOf(survivor)] as number);
  assert.ok(generated > 0 && generated < 1500, `the survivor generated ${generated} of the 1,500 tokens`);
  // New requests go to the survivor.
  const after = await client.completions.create({ model: MODEL, prompt: "Hello", max_tokens: 4, temperature: 0 });
  assert.equal(after.choices.length, 1);
}

/** The refusal that stops `serve --engine llama-server ARGS`'s workers (in this process). */
async function startFailure(args: readonly string[]): Promise<string> {
  const message = await workersRefusal(["--engine", "llama-server", ...args]);
  assert.notEqual(message, "started", `armature serve ${args.join(" ")} started`);
  return message;
}

test("an engine URL that does not answer, or is not a llama-server, stops the start with a message naming it", async () => {
  const port = await freePort();
  assert.match(
    await startFailure(["--engine-url", `http://127.0.0.1:${port}`, "--model", model, "--engine-wait", "1"]),
    new RegExp(`--engine-url http://127\\.0\\.0\\.1:${port}: llama-server did not answer GET /health with 200 within 1 s`),
  );
  assert.match(await startFailure(["--model", model]), /--engine llama-server needs --engine-url/);
  // An HTTP server that is healthy but no llama-server.
  const impostor: Server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(req.url === "/health" ? '{"status":"ok"}' : '{"hello":"world"}');
  });
  await new Promise<void>((resolve) => impostor.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(impostor.address() as { port: number }).port}`;
    assert.match(
      await startFailure(["--engine-url", url, "--model", model]),
      /GET \/props has no total_slots .*is it a llama-server\?/,
    );
  } finally {
    impostor.close();
  }
});

test("a GGUF that tokenizes otherwise than llama-server's model is refused, naming both token lists", async () => {
  const other = join(await mkdtemp(join(tmpdir(), "armature-other-")), "other.gguf");
  await writeFile(other, buildTinyModel({ merges: 40 }));
  const message = await startFailure(["--engine-url", engines[0]?.url as string, "--model", other]);
  assert.match(
    message,
    /--model .*other\.gguf does not tokenize as the llama-server at .* does: ".*" is \[[\d,]+\] here and \[[\d,]+\] there/,
  );
});

test("a Hugging Face tokenizer folder instead of the GGUF: llama-server's own greedy tokens, its chat template", async () => {
  const dir = join(await mkdtemp(join(tmpdir(), "armature-hf-")), "tiny-tokenizer");
  await writeTokenizerFolderOf(model, dir);
  const byFolder = await startServe([
    "--engine",
    "llama-server",
    "--engine-url",
    engines[0]?.url as string,
    "--tokenizer",
    dir,
    "--model-name",
    MODEL,
  ]);
  try {
    const folderClient = new OpenAI({ baseURL: `${byFolder.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const tokenizer = await loadTokenizer({ kind: "gguf", path: model });
    for (const text of ["The quick brown fox", "Numbers: 1, 2, 3,"]) {
      const reference = await direct(engines[0]?.url as string, tokenizer.encode(text), 16);
      const response = await folderClient.completions.create({ model: MODEL, prompt: text, max_tokens: 16, temperature: 0 });
      assert.equal(response.choices[0]?.text, reference.content, `prompt ${JSON.stringify(text)}`);
    }
    // The chat template comes from tokenizer_config.json: the same messages give the same prompt.
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Tell me about the sea." }];
    const viaFolder = await folderClient.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0 });
    const viaGguf = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 12, temperature: 0 });
    assert.equal(viaFolder.usage?.prompt_tokens, viaGguf.usage?.prompt_tokens);
    assert.equal(viaFolder.choices[0]?.message.content, viaGguf.choices[0]?.message.content);
  } finally {
    assert.equal(await byFolder.stop("SIGTERM"), 0, byFolder.output());
  }
});

test("a tokenizer folder of another model is refused, naming both token lists", async () => {
  await assert.rejects(
    connectLlamaServer({ url: engines[0]?.url as string, tokenizer: hfEngineTokenizer(qwen3TokenizerDir()) }),
    /--tokenizer .* does not tokenize as the llama-server at .* does: ".*" is \[[\d,]+\] here and \[[\d,]+\] there/,
  );
});
