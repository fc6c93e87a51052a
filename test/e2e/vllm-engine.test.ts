import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { HfTokenizer } from "../../src/engines/huggingface/hf-tokenizer.js";
import { connectVllm, ensureTinyModel, ggufEngineTokenizer, loadTokenizer, type Tokenizer } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { expectedTokens, type FakeVllm, startFakeVllm, workerOf } from "../helpers/fake-engine-server.js";
import { freshPrompts } from "../helpers/fresh-prompts.js";
import { loraAdmin, modelsWithParents } from "../helpers/lora-admin.js";
import { qwen3TokenizerDir } from "../helpers/tokenizer-folders.js";
import { workersRefusal } from "../helpers/workers-refusal.js";

// `armature serve --engine vllm` in front of two vLLM test doubles (test/helpers/fake-engine-server.ts: its
// OpenAI routes, /metrics and ZMQ KV event publisher with replay; no vLLM runs on these machines),
// one publishing events as tagged arrays, the other as maps (vLLM 0.26). The router follows their
// caches from the events alone: prefixes cached by requests armature never sent attract its requests.

let model: string;
let tokenizer: Tokenizer;
let engines: FakeVllm[];
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny-v2";
const BLOCK = 16;

before(async () => {
  model = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-vllm-")));
  tokenizer = await loadTokenizer({ kind: "gguf", path: model });
  // vLLM's /tokenize reads special-token text as its token, as Hugging Face tokenizers do.
  const tokenize = (text: string) => tokenizer.encode(text, { special: true });
  engines = [await startFakeVllm({ tokenize, form: "array", loras: ["sql"] }), await startFakeVllm({ tokenize, form: "map" })];
  const args = ["--engine", "vllm", "--model", model];
  for (const e of engines) {
    args.push("--engine-url", e.url, "--kv-events-endpoint", e.eventsEndpoint, "--kv-events-replay-endpoint", e.replayEndpoint);
  }
  server = await startServe(args);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
  await Promise.all(engines.map((e) => e.close()));
});

/** A prompt of `blocks` whole blocks nobody sent before. */
const freshPrompt = freshPrompts(BLOCK);

/** Sends `prompt` to a vLLM directly, as another client of it would (armature does not see it). */
async function sendDirectly(engine: FakeVllm, prompt: readonly number[]): Promise<void> {
  const response = await fetch(`${engine.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fake-model", prompt, max_tokens: 1, stream: true }),
  });
  await response.text();
}

test("tokens in and out: the completion is the engine's token ids, detokenized, with its usage", async () => {
  const prompt = freshPrompt(1);
  const response = await client.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0 });
  assert.equal(response.choices[0]?.text, tokenizer.decode(expectedTokens(prompt, 12)));
  assert.equal(response.choices[0]?.finish_reason, "length");
  assert.equal(response.usage?.completion_tokens, 12);
  assert.equal(response.usage?.prompt_tokens, prompt.length);
});

for (const index of [0, 1]) {
  test(`a prefix another client cached on the ${index === 0 ? "array" : "map"}-form vLLM draws armature's requests there`, async () => {
    const engine = engines[index] as FakeVllm;
    const prefix = freshPrompt(6);
    await sendDirectly(engine, prefix);
    await new Promise((r) => setTimeout(r, 200));
    const { data, response } = await client.completions
      .create({ model: MODEL, prompt: [...prefix, 5, 6, 7], max_tokens: 2, temperature: 0 })
      .withResponse();
    assert.equal(response.headers.get("x-armature-worker"), await workerOf(server.url, engine));
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 6 * BLOCK);
  });
}

test("vLLM's LoRA adapters: listed with their parent, requested by name on the server that has them, keyed by their own seed, loaded at run time on every server", async () => {
  assert.deepEqual(await modelsWithParents(client), [
    [MODEL, null],
    ["sql", MODEL],
  ]);
  const prompt = freshPrompt(3);
  const first = await client.completions.create({ model: "sql", prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(first.data.model, "sql");
  assert.equal(first.response.headers.get("x-armature-worker"), await workerOf(server.url, engines[0] as FakeVllm));
  assert.equal(engines[0]?.bodies.at(-1)?.model, "sql", "the adapter is vLLM's model for the request");
  await new Promise((r) => setTimeout(r, 200));
  const again = await client.completions.create({ model: "sql", prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(again.response.headers.get("x-armature-overlap-blocks"), "3", "the events' lora_name seeds the blocks' hashes");
  const base = await client.completions.create({ model: MODEL, prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(base.response.headers.get("x-armature-overlap-blocks"), "0", "the base model holds none of the adapter's blocks");

  const load = await loraAdmin(server.url, "load", { lora_name: "chat", lora_path: "/adapters/chat" });
  assert.equal(load.text, "Success: LoRA adapter 'chat' added successfully.");
  for (const engine of engines) {
    assert.deepEqual(engine.loraCalls.at(-1), { route: "/v1/load_lora_adapter", lora_name: "chat", lora_path: "/adapters/chat" });
  }
  const served = await client.completions.create({ model: "chat", prompt: freshPrompt(1), max_tokens: 1, temperature: 0 });
  assert.equal(served.model, "chat");
  assert.equal((await loraAdmin(server.url, "unload", { lora_name: "chat" })).status, 200);
  for (const engine of engines) assert.equal(engine.loraCalls.at(-1)?.route, "/v1/unload_lora_adapter");
  assert.deepEqual(
    (await client.models.list()).data.map((m) => m.id),
    [MODEL, "sql"],
  );
  // One vLLM got the adapter from another client already: its "already loaded" is what was asked.
  await fetch(`${engines[1]?.url}/v1/load_lora_adapter`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ lora_name: "direct", lora_path: "/adapters/direct" }),
  });
  const both = await loraAdmin(server.url, "load", { lora_name: "direct", lora_path: "/adapters/direct" });
  assert.equal(both.status, 200, both.text);
  const health = (await (await fetch(`${server.url}/v1/fleet`)).json()) as { workers: { loras: { served: string[] } }[] };
  assert.ok(health.workers.every((w) => w.loras.served.includes("direct")));
});

test("a batch the subscriber missed is fetched from the replay socket at the next one", async () => {
  const engine = engines[1] as FakeVllm;
  const missed = freshPrompt(5);
  // The other vLLM holds the first 2 blocks: without the replayed batch, routing would go there.
  await sendDirectly(engines[0] as FakeVllm, missed.slice(0, 2 * BLOCK));
  engine.dropNext(1);
  await sendDirectly(engine, missed);
  // The next batch shows the gap; its replay brings the missed one.
  await sendDirectly(engine, freshPrompt(1));
  await new Promise((r) => setTimeout(r, 300));
  const { response, data } = await client.completions
    .create({ model: MODEL, prompt: [...missed, 9], max_tokens: 2, temperature: 0 })
    .withResponse();
  assert.equal(response.headers.get("x-armature-worker"), await workerOf(server.url, engine));
  assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 5 * BLOCK);
});

test("a --block-size other than vLLM's stops the start, naming both sizes", async () => {
  const engine = engines[0] as FakeVllm;
  const error = await startServe(["--engine", "vllm", "--model", model, "--engine-url", engine.url, "--block-size", "32"]).then(
    async (s) => {
      await s.stop();
      return undefined;
    },
    (e: Error) => e,
  );
  assert.match(String(error?.message), /--block-size 32: the vllm at .* stores blocks of 16 tokens/);
});

test("event endpoints that do not pair with the engine URLs, and a vllm worker without --model, are refused by name", async () => {
  const refused = workersRefusal;
  const [a, b] = engines as [FakeVllm, FakeVllm];
  assert.match(
    await refused([
      "--engine",
      "vllm",
      "--model",
      model,
      "--engine-url",
      a.url,
      "--engine-url",
      b.url,
      "--kv-events-endpoint",
      a.eventsEndpoint,
    ]),
    /--kv-events-endpoint was given 1 times for 2 --engine-url/,
  );
  assert.match(
    await refused(["--engine", "vllm", "--model", model, "--engine-url", a.url, "--kv-events-replay-endpoint", a.replayEndpoint]),
    /--kv-events-replay-endpoint was given 1 times for 0 --kv-events-endpoint/,
  );
  assert.match(
    await refused(["--engine", "vllm", "--engine-url", a.url]),
    /--tokenizer is needed: a vllm worker reads the model's tokenizer/,
  );
  assert.match(
    await refused([
      "--engine",
      "llama-server",
      "--model",
      model,
      "--engine-url",
      a.url,
      "--kv-events-endpoint",
      a.eventsEndpoint,
    ]),
    /--kv-events-endpoint: llama-server publishes no KV events/,
  );
});

test("--tokenizer with Qwen3's own tokenizer folder: its chat template and tokens reach vLLM, its text comes back", async () => {
  const qwen = HfTokenizer.load(qwen3TokenizerDir());
  const engine = await startFakeVllm({ tokenize: (text) => qwen.encode(text), vocabSize: 151_000 });
  const qwenServer = await startServe([
    "--engine",
    "vllm",
    "--engine-url",
    engine.url,
    "--tokenizer",
    qwen3TokenizerDir(),
    "--model-name",
    "qwen3",
  ]);
  try {
    const qwenClient = new OpenAI({ baseURL: `${qwenServer.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await qwenClient.chat.completions.create({
      model: "qwen3",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hello" },
      ],
      max_tokens: 6,
    });
    // Qwen3's template, worked by hand from its tokenizer_config.json.
    const prompt = qwen.encode(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    );
    assert.equal(response.usage?.prompt_tokens, prompt.length);
    assert.equal(response.choices[0]?.message.content, qwen.decode(expectedTokens(prompt, 6, 151_000)));
  } finally {
    assert.equal(await qwenServer.stop("SIGTERM"), 0, qwenServer.output());
    await engine.close();
    await qwen.close();
  }
});

test("a request's priority reaches a vLLM that schedules by priority (--scheduling-policy priority), and no other", async () => {
  const prompt = freshPrompt(1);
  const urgent = { model: MODEL, prompt, max_tokens: 2, priority: -3 } as OpenAI.CompletionCreateParamsNonStreaming;
  await client.completions.create(urgent);
  assert.equal(
    engines.flatMap((e) => e.bodies).some((b) => "priority" in b),
    false,
    "a vLLM scheduling first come, first served is sent none",
  );
  const engine = await startFakeVllm({ tokenize: (text) => tokenizer.encode(text, { special: true }) });
  const prioritized = await startServe([
    "--engine",
    "vllm",
    "--model",
    model,
    "--engine-url",
    engine.url,
    "--scheduling-policy",
    "priority",
  ]);
  try {
    const prioritizedClient = new OpenAI({ baseURL: `${prioritized.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await prioritizedClient.completions.create(urgent);
    assert.equal(engine.bodies.at(-1)?.priority, -3);
  } finally {
    assert.equal(await prioritized.stop("SIGTERM"), 0, prioritized.output());
    await engine.close();
  }
});

test("split prefill and decode through vLLM's KV connector: the decode server pulls what the prefill server kept", async () => {
  const tokenize = (text: string) => tokenizer.encode(text, { special: true });
  const decodeEngine = await startFakeVllm({ tokenize });
  const prefillEngine = await startFakeVllm({ tokenize });
  const noConnector = await startFakeVllm({ tokenize, noKvConnector: true });
  const expiring = await startFakeVllm({ tokenize, expireTransfers: true });
  const split = await startServe([
    "--engine",
    "vllm",
    "--model",
    model,
    "--engine-url",
    decodeEngine.url,
    "--prefill-engine-url",
    prefillEngine.url,
  ]);
  try {
    const splitClient = new OpenAI({ baseURL: `${split.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const prompt = freshPrompt(3);
    const { data, response } = await splitClient.completions
      .create({ model: MODEL, prompt, max_tokens: 10, temperature: 0 })
      .withResponse();
    assert.equal(data.choices[0]?.text, tokenizer.decode(expectedTokens(prompt, 10)));
    assert.equal(data.usage?.completion_tokens, 10);
    assert.deepEqual([prefillEngine.prefills, decodeEngine.pulls], [1, 1]);
    const health = (await (await fetch(`${split.url}/health`)).json()) as {
      instances: { id: string; role: string; engine_url: string }[];
    };
    const decodeWorker = health.instances.find((i) => i.engine_url === decodeEngine.url);
    assert.equal(decodeWorker?.role, "decode");
    assert.equal(health.instances.find((i) => i.engine_url === prefillEngine.url)?.role, "prefill");
    assert.equal(response.headers.get("x-armature-worker"), decodeWorker?.id);
    // Streamed the same way.
    const streamed = freshPrompt(2);
    let text = "";
    const stream = await splitClient.completions.create({
      model: MODEL,
      prompt: streamed,
      max_tokens: 6,
      temperature: 0,
      stream: true,
    });
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    assert.equal(text, tokenizer.decode(expectedTokens(streamed, 6)));
    assert.deepEqual([prefillEngine.prefills, decodeEngine.pulls], [2, 2]);
  } finally {
    assert.equal(await split.stop("SIGTERM"), 0, split.output());
  }
  // The two ways a split request falls back to a prefill on the decode worker, engine by engine
  // (the worker's fallback on them is src/worker's): a prefill server without a KV connector returns
  // no transfer parameters, and a decode server that cannot pull (the prefill server freed the KV
  // first) fails the decode call with TRANSFER_FAILED before any token.
  const engineTokenizer = await ggufEngineTokenizer(model);
  const request = {
    type: "generate-request" as const,
    requestId: "r",
    model: "fake-model",
    tokenIds: freshPrompt(2),
    sampling: { temperature: 0 },
    maxTokens: 4,
  };
  const signal = new AbortController().signal;
  const [withoutConnector, expiringPrefill, decoder] = await Promise.all(
    [noConnector, expiring, decodeEngine].map((e) => connectVllm({ url: e.url, tokenizer: engineTokenizer })),
  );
  try {
    await assert.rejects(
      withoutConnector?.prefill?.(request, { signal, exportPath: "" }) as Promise<unknown>,
      /returned no kv_transfer_params for a prefill: start it with a KV connector/,
    );
    const prefilled = await expiringPrefill?.prefill?.(request, { signal, exportPath: "" });
    const kv = prefilled?.kv;
    assert.equal(kv?.format, "engine-transfer-params");
    const params = (kv as { params: Record<string, unknown> }).params;
    await assert.rejects(
      (async () => {
        for await (const _ of decoder?.generate(request, { signal, importedKv: { format: "engine-transfer-params", params } }) ??
          []);
      })(),
      (error: Error & { code?: string }) => error.code === "TRANSFER_FAILED" && /no such remote blocks/.test(error.message),
    );
  } finally {
    await Promise.all([withoutConnector, expiringPrefill, decoder].map((e) => e?.close()));
    await Promise.all([decodeEngine.close(), prefillEngine.close(), noConnector.close(), expiring.close()]);
  }
});

test("structured output goes to vLLM in its own terms: a schema as response_format, a regex and choices as structured_outputs; GBNF refused by name", async () => {
  const schema = { type: "object", properties: { n: { type: "integer", minimum: 1, maximum: 7 } }, required: ["n"] };
  await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "A number?" }],
    max_tokens: 4,
    response_format: { type: "json_schema", json_schema: { name: "n", schema } },
  });
  const sent = engines.flatMap((e) => e.bodies).find((b) => b.response_format !== undefined);
  assert.deepEqual(sent?.response_format, { type: "json_schema", json_schema: { name: "response", schema, strict: true } });
  // guided_json is a schema too, on completions as on chat.
  await client.completions.create({
    model: MODEL,
    prompt: "A number?",
    max_tokens: 4,
    // @ts-expect-error: vLLM's extension, not in the openai client's types
    guided_json: schema,
  });
  assert.equal(engines.flatMap((e) => e.bodies).filter((b) => b.response_format !== undefined).length, 2);
  // The older guided_regex and vLLM 0.12's structured_outputs both reach vLLM as structured_outputs
  // (vLLM 0.12 ignores the guided_* fields without a word).
  const completion = (fields: Record<string, unknown>) =>
    fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "Hi", max_tokens: 4, ...fields }),
    });
  assert.equal((await completion({ guided_regex: "[a-z]+" })).status, 200);
  assert.equal((await completion({ structured_outputs: { choice: ["yes", "no"] } })).status, 200);
  const constrained = engines.flatMap((e) => e.bodies).filter((b) => b.structured_outputs !== undefined);
  assert.deepEqual(
    constrained.map((b) => b.structured_outputs),
    [{ regex: "[a-z]+" }, { choice: ["yes", "no"] }],
  );
  assert.equal(
    constrained.some((b) => "guided_regex" in b || "guided_choice" in b),
    false,
  );
  const refused = await completion({ guided_grammar: 'root ::= "a"' });
  assert.equal(refused.status, 400);
  const body = (await refused.json()) as { error: { param: string; message: string } };
  assert.equal(body.error.param, "guided_grammar");
  assert.match(body.error.message, /not served by vllm workers/);
});

test("the fleet view (dashboard) names each worker's engine and the server it drives", async () => {
  const fleet = (await (await fetch(`${server.url}/v1/fleet`)).json()) as {
    workers: { engine: string; backend: string | null; engineUrl: string | null }[];
  };
  assert.deepEqual(
    fleet.workers.map((w) => [w.engine, w.backend, w.engineUrl]).sort(),
    engines.map((e) => ["vllm", "vllm", e.url]).sort(),
  );
});
