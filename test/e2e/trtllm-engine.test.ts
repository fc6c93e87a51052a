import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { ensureTinyModel, loadTokenizer, type Tokenizer } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { expectedTokens, workerOf } from "../helpers/fake-engine-server.js";
import { type FakeTrtllm, startFakeTrtllm } from "../helpers/fake-trtllm.js";
import { freshPrompts } from "../helpers/fresh-prompts.js";
import { loraAdmin, modelsWithParents } from "../helpers/lora-admin.js";
import { until } from "../helpers/poll.js";
import { workersRefusal } from "../helpers/workers-refusal.js";

// `armature serve --engine trtllm` in front of two trtllm-serve test doubles
// (test/helpers/fake-trtllm.ts: its OpenAI routes with TensorRT-LLM's strict request model, its
// /server_info, /prometheus/metrics and the KV cache manager V2's ZMQ publisher; no TensorRT-LLM
// runs on these machines).

let model: string;
let tokenizer: Tokenizer;
let engines: [FakeTrtllm, FakeTrtllm];
let server: ServeProcess;
let client: OpenAI;
/** The tiny model's beginning-of-sequence token (its GGUF names `<|endoftext|>`), which TensorRT-LLM's tokenizer adds to text. */
let bos: number;
const MODEL = "armature-tiny-v2";
const BLOCK = 32;
/** What the doubles' tokenizers do: the worker's, special-token text read as its token. */
const tokenize = (text: string) => tokenizer.encode(text, { special: true });

before(async () => {
  model = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-trtllm-")));
  tokenizer = await loadTokenizer({ kind: "gguf", path: model });
  bos = tokenize("<|endoftext|>")[0] as number;
  engines = [
    await startFakeTrtllm({ tokenize, bos, perfMetrics: true, adapterPaths: ["/adapters/sql", "/adapters/chat"] }),
    await startFakeTrtllm({ tokenize, serverInfo: false, internalTokenize: false, adapterPaths: ["/adapters/sql"] }),
  ];
  const args = ["--engine", "trtllm", "--model", model, "--lora", "sql=/adapters/sql"];
  // The first is followed through its ZMQ publisher (KV cache manager V2), the second through its pull route.
  args.push("--engine-url", engines[0].url, "--kv-events-endpoint", engines[0].eventsEndpoint);
  args.push("--engine-url", engines[1].url, "--kv-events-endpoint", `${engines[1].url}/kv_cache_events`);
  server = await startServe(args);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
  await Promise.all(engines.map((e) => e.close()));
});

/** A prompt of `blocks` whole blocks nobody sent before. */
const freshPrompt = freshPrompts(BLOCK);

/** Sends `prompt` to a trtllm-serve directly, as another client of it would (armature does not see it). */
async function sendDirectly(engine: FakeTrtllm, prompt: readonly number[]): Promise<void> {
  const response = await fetch(`${engine.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "fake-trtllm-model", prompt, max_tokens: 1 }),
  });
  await response.text();
}

test("tokens in and out: the completion is the engine's token ids (detokenize: false), detokenized here, with its usage", async () => {
  const prompt = freshPrompt(1);
  const response = await client.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0 });
  assert.equal(response.choices[0]?.text, tokenizer.decode(expectedTokens(prompt, 12)));
  assert.equal(response.choices[0]?.finish_reason, "length");
  assert.deepEqual([response.usage?.prompt_tokens, response.usage?.completion_tokens], [prompt.length, 12]);
  const body = engines.map((e) => e.bodies.at(-1)).find((b) => JSON.stringify(b?.prompt) === JSON.stringify(prompt));
  assert.deepEqual(body, {
    model: "fake-trtllm-model",
    prompt,
    max_tokens: 12,
    stream: true,
    stream_options: { include_usage: true },
    detokenize: false,
    temperature: 0,
  });
});

test("sampling fields are TensorRT-LLM's own, each as asked; a stop token is kept in the output as on every engine", async () => {
  const prompt = freshPrompt(1);
  const stop = expectedTokens(prompt, 3)[2] as number;
  const stream = await client.completions.create({
    model: MODEL,
    prompt,
    max_tokens: 10,
    temperature: 0.7,
    top_p: 0.9,
    seed: 5,
    presence_penalty: 0.5,
    stream: true,
    stream_options: { include_usage: true },
    // vLLM's extensions, which TensorRT-LLM names alike.
    ...({ top_k: 40, min_tokens: 2, repetition_penalty: 1.1, stop_token_ids: [stop] } as object),
  });
  let text = "";
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, tokenizer.decode(expectedTokens(prompt, 3)));
  assert.equal(finish, "stop");
  const body = engines.map((e) => e.bodies.at(-1)).find((b) => JSON.stringify(b?.prompt) === JSON.stringify(prompt));
  assert.deepEqual(
    [body?.temperature, body?.top_p, body?.top_k, body?.seed, body?.presence_penalty, body?.repetition_penalty, body?.min_tokens],
    [0.7, 0.9, 40, 5, 0.5, 1.1, 2],
  );
  assert.deepEqual([body?.stop_token_ids, body?.include_stop_str_in_output], [[stop], true]);
});

for (const index of [0, 1]) {
  test(`a prefix another client cached on trtllm-serve ${index} (events ${index === 0 ? "over ZMQ" : "pulled"}) draws armature's requests there, and its cached tokens come back`, async () => {
    const engine = engines[index] as FakeTrtllm;
    const prefix = freshPrompt(3);
    const worker = await workerOf(server.url, engine);
    const indexed = async () => {
      const fleet = (await (await fetch(`${server.url}/v1/fleet`)).json()) as {
        workers: { id: string; kv: { indexedBlocks: { device?: number } | null } }[];
      };
      return fleet.workers.find((w) => w.id === worker)?.kv.indexedBlocks?.device ?? 0;
    };
    const before = await indexed();
    await sendDirectly(engine, prefix);
    // The events arrive on their own schedule (the pull route is read every 100 ms): wait for the index.
    await until("the prefix's blocks indexed", indexed, (now) => now >= before + 3);
    const { data, response } = await client.completions
      .create({ model: MODEL, prompt: [...prefix, 5, 6, 7], max_tokens: 2, temperature: 0 })
      .withResponse();
    assert.equal(response.headers.get("x-armature-worker"), worker);
    assert.equal(response.headers.get("x-armature-overlap-blocks"), "3", "the router knew of the blocks from the events");
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 3 * BLOCK);
  });
}

test("what TensorRT-LLM would ignore or armature cannot read is refused by name before any engine is asked", async () => {
  const sent = engines[0].bodies.length + engines[1].bodies.length;
  const refusal = async (extra: Record<string, unknown>) =>
    client.completions.create({ model: MODEL, prompt: "Hello", max_tokens: 2, ...extra } as never).then(
      () => undefined,
      (error: { status?: number; param?: string; message?: string }) => [error.status, error.param, error.message],
    );
  const logprobs = await refusal({ logprobs: 2 });
  assert.deepEqual(logprobs?.slice(0, 2), [400, "logprobs"]);
  const regex = await refusal({ guided_regex: "a+" });
  assert.deepEqual(regex?.slice(0, 2), [400, "guided_regex"]);
  assert.match(String(regex?.[2]), /guided_decoding_backend/);
  const format = await client.chat.completions
    .create({ model: MODEL, messages: [{ role: "user", content: "Hi" }], response_format: { type: "json_object" } })
    .then(
      () => undefined,
      (error: { status?: number; param?: string }) => [error.status, error.param],
    );
  assert.deepEqual(format, [400, "response_format"]);
  assert.equal(engines[0].bodies.length + engines[1].bodies.length, sent);
});

test("LoRA adapters go as TensorRT-LLM's lora_request (name, an id per adapter, the folder on its host); added at run time", async () => {
  assert.deepEqual(await modelsWithParents(client), [
    [MODEL, null],
    ["sql", MODEL],
  ]);
  const prompt = freshPrompt(1);
  const first = await client.completions.create({ model: "sql", prompt, max_tokens: 2, temperature: 0 });
  assert.equal(first.model, "sql");
  const body = engines.map((e) => e.bodies.at(-1)).find((b) => JSON.stringify(b?.prompt) === JSON.stringify(prompt));
  assert.deepEqual(body?.lora_request, { lora_name: "sql", lora_int_id: 1, lora_path: "/adapters/sql" });
  assert.equal(body?.model, "fake-trtllm-model", "the model stays the served one");
  assert.equal((await loraAdmin(server.url, "load", { lora_name: "chat", lora_path: "/adapters/chat" })).status, 200);
  await until(
    "adapters listed",
    () => modelsWithParents(client),
    (models) => models.some(([id]) => id === "chat"),
  );
  // The second server cannot read /adapters/chat: its refusal comes back as it said it, or the first serves it.
  const answers = await Promise.all(
    [0, 1, 2, 3].map(() =>
      client.completions.create({ model: "chat", prompt: freshPrompt(1), max_tokens: 1 }).then(
        () => "ok",
        (error: Error) => error.message,
      ),
    ),
  );
  for (const answer of answers) assert.match(answer, /^ok$|LoRA checkpoint path \/adapters\/chat does not exist/);
  const sentChat = engines
    .flatMap((e) => e.bodies)
    .filter((b) => (b.lora_request as { lora_name?: string })?.lora_name === "chat");
  assert.ok(sentChat.length > 0);
  for (const b of sentChat) assert.deepEqual(b.lora_request, { lora_name: "chat", lora_int_id: 2, lora_path: "/adapters/chat" });
});

test("a client that goes away closes the engine's stream; an error the engine sends mid-stream reaches the client", async () => {
  const controller = new AbortController();
  const stream = await client.completions.create(
    { model: MODEL, prompt: freshPrompt(1), max_tokens: 30_000, stream: true, ...({ ignore_eos: true } as object) },
    { signal: controller.signal },
  );
  for await (const _ of stream) break;
  controller.abort();
  await until(
    "streams open on the engines",
    async () => engines[0].running + engines[1].running,
    (open) => open === 0,
  );
  for (const engine of engines) engine.failNextAfter(2);
  // The error comes as an SSE error event after the first tokens (the status was 200 already).
  const failed = await (async () => {
    try {
      const failing = await client.completions.create({ model: MODEL, prompt: freshPrompt(1), max_tokens: 8, stream: true });
      for await (const _ of failing) {
      }
      return "completed";
    } catch (error) {
      return (error as Error).message;
    }
  })();
  assert.match(failed, /Executor worker returned error/);
});

test("the engine's load and KV capacity come from /prometheus/metrics where it serves one; /health names each server", async () => {
  const health = (await (await fetch(`${server.url}/health`)).json()) as {
    instances: { id: string; engine: string; engine_url: string }[];
  };
  assert.deepEqual(health.instances.map((i) => [i.engine, i.engine_url]).sort(), engines.map((e) => ["trtllm", e.url]).sort());
  type Fleet = { workers: { engineUrl: string; kv: { blockSize: number; activeBlocks: number | null; totalBlocks: number } }[] };
  const kvOf = (fleet: Fleet, engine: FakeTrtllm) => fleet.workers.find((w) => w.engineUrl === engine.url)?.kv;
  // The first server's gauges: 4,096 blocks, those its cache holds in use (the tests above filled some).
  const fleet = await until(
    "the first server's KV blocks in use",
    async () => (await (await fetch(`${server.url}/v1/fleet`)).json()) as Fleet,
    (now) => (kvOf(now, engines[0])?.activeBlocks ?? 0) > 0,
  );
  assert.equal(kvOf(fleet, engines[0])?.totalBlocks, 4096);
  // The second serves no /prometheus/metrics nor /server_info: no capacity known, TensorRT-LLM's default block size.
  assert.deepEqual(
    [kvOf(fleet, engines[1])?.totalBlocks, kvOf(fleet, engines[1])?.blockSize, kvOf(fleet, engines[0])?.blockSize],
    [0, 32, 32],
  );
});

test("a --block-size other than the server's, a server before detokenize, another tokenizer, a split role: each stops the start by name", async () => {
  const refused = workersRefusal;
  assert.match(
    await refused(["--engine", "trtllm", "--model", model, "--engine-url", engines[0].url, "--block-size", "16"]),
    /--block-size 16: the trtllm-serve at .* stores blocks of 32 tokens \(GET \/server_info's tokens_per_block\)/,
  );
  const old = await startFakeTrtllm({ tokenize, beforeDetokenize: true });
  const other = await startFakeTrtllm({ tokenize: (text) => [...tokenize(text), 7] });
  const otherIds = await startFakeTrtllm({ tokenize: (text) => tokenize(text).map((t) => t + 1) });
  const withBos = await startFakeTrtllm({ tokenize, bos });
  try {
    assert.match(
      await refused(["--engine", "trtllm", "--model", model, "--engine-url", old.url]),
      /detokenize: false was refused .*detokenize.*Extra inputs are not permitted.*; armature reads token ids/s,
    );
    assert.match(
      await refused(["--engine", "trtllm", "--model", model, "--engine-url", other.url]),
      /--model .* does not tokenize as the trtllm at .*: .* is "\d+ tokens" here and "\d+ tokens" there/,
    );
    // As many tokens, other ids: only the server's /_internal/tokenize tells.
    assert.match(
      await refused(["--engine", "trtllm", "--model", model, "--engine-url", otherIds.url]),
      /does not tokenize as the trtllm at .*: .* is \[[\d,]+\] here and \[[\d,]+\] there/,
    );
    // That route adds the beginning-of-sequence token, as its tokenizer does to text.
    assert.equal(await refused(["--engine", "trtllm", "--model", model, "--engine-url", withBos.url]), "started");
  } finally {
    await Promise.all([old.close(), other.close(), otherIds.close(), withBos.close()]);
  }
  assert.match(
    await refused([
      "--engine",
      "trtllm",
      "--model",
      model,
      "--engine-url",
      engines[0].url,
      "--prefill-engine-url",
      engines[1].url,
    ]),
    /--prefill-engine-url: trtllm workers serve aggregated only/,
  );
  assert.match(
    await refused([
      ...["--engine", "trtllm", "--model", model, "--engine-url", engines[1].url],
      ...["--kv-events-endpoint", `${engines[1].url}/kv_cache_events`, "--kv-events-replay-endpoint", engines[0].replayEndpoint],
    ]),
    /--kv-events-replay-endpoint: .*\/kv_cache_events is trtllm-serve's pull route, which has no replay/,
  );
  assert.match(
    await refused(["--engine", "vllm", "--model", model, "--engine-url", engines[0].url, "--context-size", "4096"]),
    /--context-size: the vllm says its own context length/,
  );
});
