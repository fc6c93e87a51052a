import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { EVERY_SAMPLER, generateRequest } from "../../../test/helpers/generate-request.js";
import { ArmatureError, type GenerateResponse } from "../../protocol/index.js";
import type { EngineServerEngine } from "../engine-server/engine-server-engine.js";
import type { EngineTokenizer } from "../engine-server/engine-tokenizer.js";
import { completionBody } from "./completion-body.js";
import { connectLlamaServer, parseLlamaServerMetrics } from "./llama-server-engine.js";

// The request body llama-server gets, and what the engine does with answers no real llama-server
// gives (garbage, a cut stream, errors): a server on a loopback port plays llama-server's routes
// (/health, /props, /tokenize, /completion) and answers /completion as each test says. The real
// llama-server is driven in test/e2e/llama-server-engine.test.ts.

const request = generateRequest;

test("greedy: the prompt as token ids, every sampler of llama-server's own defaults set off", () => {
  assert.deepEqual(completionBody(request()), {
    prompt: [1, 2, 3],
    n_predict: 5,
    stream: true,
    cache_prompt: true,
    return_tokens: true,
    temperature: 0,
    top_k: 0,
    top_p: 1,
    min_p: 0,
    typical_p: 1,
    xtc_probability: 0,
    dry_multiplier: 0,
    mirostat: 0,
    repeat_penalty: 1,
    presence_penalty: 0,
    frequency_penalty: 0,
    seed: 0,
  });
});

test("sampled: each field mapped one by one; seeds taken modulo 2^32; logit_bias as pairs; JSON constraints", () => {
  const body = completionBody(
    request({
      sampling: { ...EVERY_SAMPLER, seed: 2 ** 32 + 5, logitBias: [{ token: 7, bias: -100 }] },
      ignoreEos: true,
      constraint: { type: "json_object" },
    }),
  );
  assert.deepEqual(
    [
      body.temperature,
      body.top_p,
      body.top_k,
      body.min_p,
      body.seed,
      body.presence_penalty,
      body.frequency_penalty,
      body.repeat_penalty,
    ],
    [0.7, 0.9, 20, 0.1, 5, 0.5, 0.25, 1.2],
  );
  assert.deepEqual(body.logit_bias, [[7, -100]]);
  assert.equal(body.ignore_eos, true);
  assert.deepEqual(body.json_schema, {});
  assert.equal(completionBody(request({ sampling: { temperature: 1, seed: -1 } })).seed, 2 ** 32 - 1);
  // A schema goes as armature's own grammar of it, so llama-server holds to what armature enforces.
  const schema = { type: "object", properties: { a: { type: "integer", minimum: 1, maximum: 7 } }, required: ["a"] };
  const grammar = completionBody(request({ constraint: { type: "json_schema", schema } })).grammar as string;
  assert.match(grammar, /^root ::= /);
  assert.match(grammar, /\[\\x31-\\x37\]/);
});

test("what llama-server cannot do is refused naming the field", () => {
  for (const [overrides, param] of [
    [{ logprobs: { top: 2 } }, "logprobs"],
    [{ minTokens: 3 }, "min_tokens"],
    [{ stopTokenIds: [9] }, "stop_token_ids"],
  ] as const) {
    assert.throws(
      () => completionBody(request(overrides)),
      (e: ArmatureError) => e.code === "NOT_SUPPORTED" && e.param === param,
    );
  }
});

let server: Server;
let url: string;
let answer: (req: IncomingMessage, res: ServerResponse) => void;
let healthy = true;
const tokenizer: EngineTokenizer = {
  source: { kind: "gguf", path: "model.gguf" },
  flag: "--model model.gguf",
  encode: () => [4, 5, 6],
  chatTemplate: undefined,
  eosTokenIds: [2],
  bosToken: undefined,
  eosToken: undefined,
};

before(async () => {
  server = createServer((req, res) => {
    if (req.url === "/health") {
      res.writeHead(healthy ? 200 : 503).end();
    } else if (req.url === "/props") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ total_slots: 2, default_generation_settings: { n_ctx: 512 }, chat_template: "" }));
    } else if (req.url === "/lora-adapters") {
      res.writeHead(200, { "content-type": "application/json" }).end("[]");
    } else if (req.url === "/tokenize") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"tokens":[4,5,6]}');
    } else {
      answer(req, res);
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => server.close());

const sse = (res: ServerResponse, ...messages: unknown[]) => {
  res.writeHead(200, { "content-type": "text/event-stream" });
  for (const m of messages) res.write(`data: ${typeof m === "string" ? m : JSON.stringify(m)}\n\n`);
};

async function drain(engine: EngineServerEngine, signal = new AbortController().signal): Promise<GenerateResponse[]> {
  const out: GenerateResponse[] = [];
  for await (const item of engine.generate(request(), { signal })) out.push(item);
  return out;
}

async function failure(engine: EngineServerEngine): Promise<ArmatureError> {
  const error = await drain(engine).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof ArmatureError, String(error));
  return error;
}

test("a stream is read into token deltas, the stop type into the finish reason, cache_n into cached tokens", async () => {
  const engine = await connectLlamaServer({ url, tokenizer });
  try {
    assert.deepEqual(
      [engine.info.kind, engine.info.maxSequences, engine.info.contextLength, engine.info.engineUrl],
      ["llama-server", 2, 512, url],
    );
    assert.equal(engine.info.publishesKvEvents, false);
    answer = (_req, res) => {
      sse(
        res,
        { tokens: [10], stop: false },
        { tokens: [11, 12], stop: false },
        { tokens: [], stop: true, stop_type: "eos", timings: { cache_n: 2 } },
      );
      res.end();
    };
    assert.deepEqual(await drain(engine), [
      { type: "token-delta", tokenIds: [10] },
      { type: "token-delta", tokenIds: [11, 12] },
      { type: "request-end", finishReason: "stop", promptTokens: 3, completionTokens: 3, cachedTokens: 2 },
    ]);
  } finally {
    await engine.close();
  }
});

test("garbage, an error message, a cut stream and a busy server each fail the request by name; none crashes", async () => {
  const engine = await connectLlamaServer({ url, tokenizer });
  try {
    answer = (_req, res) => {
      sse(res, "{not json");
      res.end();
    };
    let error = await failure(engine);
    assert.equal(error.code, "ENGINE_FAILED");
    assert.equal(error.retryable, false);
    assert.match(error.message, new RegExp(`llama-server at ${url} sent a stream message that is not JSON`));

    answer = (_req, res) => {
      sse(res, { tokens: ["a"], stop: false });
      res.end();
    };
    assert.match((await failure(engine)).message, /whose tokens are not token ids/);

    answer = (_req, res) => {
      sse(res, { error: { code: 400, message: "the request exceeds the available context size" } });
      res.end();
    };
    assert.match((await failure(engine)).message, /failed the request: the request exceeds the available context size/);

    answer = (_req, res) => {
      sse(res, { tokens: [10], stop: false });
      res.end();
    };
    error = await failure(engine);
    assert.equal(error.code, "WORKER_UNAVAILABLE");
    assert.equal(error.retryable, true, "a cut stream moves to another worker");

    healthy = true;
    await new Promise((r) => setTimeout(r, 10));
    answer = (_req, res) => {
      res.writeHead(503, { "content-type": "application/json" }).end('{"error":{"code":503,"message":"Loading model"}}');
    };
    const restored = await connectLlamaServer({ url, tokenizer });
    try {
      error = await failure(restored);
      assert.equal(error.code, "ENGINE_FAILED");
      assert.equal(error.retryable, true);
      assert.match(error.message, /answered 503: Loading model/);
    } finally {
      await restored.close();
    }
  } finally {
    await engine.close();
  }
});

test("while /health fails, requests are refused retryably at once; when it answers again, served again", async () => {
  const engine = await connectLlamaServer({ url, tokenizer, healthIntervalMs: 20 });
  try {
    healthy = false;
    await new Promise((r) => setTimeout(r, 80));
    const error = await failure(engine);
    assert.equal(error.code, "WORKER_UNAVAILABLE");
    assert.equal(error.retryable, true);
    assert.match(error.message, /does not answer \/health/);
    healthy = true;
    await new Promise((r) => setTimeout(r, 80));
    answer = (_req, res) => {
      sse(res, { tokens: [10], stop: false }, { tokens: [], stop: true, stop_type: "limit" });
      res.end();
    };
    assert.equal((await drain(engine)).at(-1)?.type, "request-end");
  } finally {
    healthy = true;
    await engine.close();
  }
});

test("cancelling a request closes its connection, and the stream ends cancelled", async () => {
  const engine = await connectLlamaServer({ url, tokenizer });
  try {
    let closed!: () => void;
    const connectionClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    answer = (req, res) => {
      sse(res, { tokens: [10], stop: false });
      req.socket.once("close", closed);
    };
    const controller = new AbortController();
    const items: GenerateResponse[] = [];
    for await (const item of engine.generate(request(), { signal: controller.signal })) {
      items.push(item);
      if (item.type === "token-delta") controller.abort();
    }
    await connectionClosed;
    assert.deepEqual(items.at(-1), {
      type: "request-end",
      finishReason: "cancelled",
      promptTokens: 3,
      completionTokens: 1,
      cachedTokens: 0,
    });
    assert.equal(engine.load().activeRequests, 0);
  } finally {
    await engine.close();
  }
});

test("a probe that tokenizes otherwise stops the start, naming both token lists", async () => {
  const other = { ...tokenizer, encode: () => [4, 5, 7] };
  await assert.rejects(
    connectLlamaServer({ url, tokenizer: other }),
    /--model model\.gguf does not tokenize as the llama-server at .* is \[4,5,7\] here and \[4,5,6\] there/,
  );
});

test("llama-server's /metrics gauges become the worker's load: what it runs and what it defers", () => {
  // The exposition llama-server writes with --metrics (tools/server: "llamacpp:" + name + " " + value).
  const text = [
    "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.",
    "# TYPE llamacpp:prompt_tokens_total counter",
    "llamacpp:prompt_tokens_total 1024",
    "# HELP llamacpp:requests_processing Number of requests processing.",
    "# TYPE llamacpp:requests_processing gauge",
    "llamacpp:requests_processing 3",
    "# HELP llamacpp:requests_deferred Number of requests deferred.",
    "# TYPE llamacpp:requests_deferred gauge",
    "llamacpp:requests_deferred 2",
    "",
  ].join("\n");
  assert.deepEqual(parseLlamaServerMetrics(text), { activeRequests: 3, waitingRequests: 2 });
  assert.deepEqual(parseLlamaServerMetrics("no metrics here"), {});
});

test("with adapters loaded, each request sets llama-server's per-request lora scales: its adapter on, the others off", () => {
  const adapters = [
    { name: "sea", id: 0 },
    { name: "sql", id: 1 },
  ];
  assert.deepEqual(completionBody(generateRequest({ lora: "sql" }), adapters).lora, [
    { id: 0, scale: 0 },
    { id: 1, scale: 1 },
  ]);
  assert.deepEqual(completionBody(generateRequest(), adapters).lora, [
    { id: 0, scale: 0 },
    { id: 1, scale: 0 },
  ]);
  assert.equal("lora" in completionBody(generateRequest()), false, "no adapters: llama-server's defaults, no field");
});
