import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";
import { rawRequest } from "../helpers/raw-http.js";

// Every bad input gets an OpenAI error object with the right status, and the server keeps serving.
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny";
const CONTEXT = 256;
const BODY_LIMIT = 64 * 1024;

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-bad-"));
  server = await startServe(["--context-size", String(CONTEXT), "--max-body-bytes", String(BODY_LIMIT)], {
    ARMATURE_CACHE_DIR: cacheDir,
  });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function post(path: string, body: string | object): Promise<{ status: number; body: ErrorBody }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const json = (await res.json()) as ErrorBody;
  assertMatchesSchema("ErrorResponse", json);
  assert.match(res.headers.get("x-request-id") ?? "", /.+/);
  return { status: res.status, body: json };
}

const chat = (extra: object) => ({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 4, ...extra });

test("malformed JSON → 400", async () => {
  const { status, body } = await post("/v1/chat/completions", '{"model": "armature-tiny", "messages": [');
  assert.equal(status, 400);
  assert.match(body.error.message, /not valid JSON/);
});

test("wrong types → 400 naming the field", async () => {
  for (const [field, value] of [
    ["max_tokens", "ten"],
    ["temperature", "hot"],
    ["stream", "yes"],
    ["messages", "hello"],
  ] as const) {
    const { status, body } = await post("/v1/chat/completions", chat({ [field]: value }));
    assert.equal(status, 400, field);
    assert.equal(body.error.param, field);
    assert.equal(body.error.type, "invalid_request_error");
  }
  const { status, body } = await post("/v1/chat/completions", chat({ messages: [{ role: "wizard", content: "hi" }] }));
  assert.equal(status, 400);
  assert.equal(body.error.param, "messages[0].role");
});

test("empty messages → 400", async () => {
  const { status, body } = await post("/v1/chat/completions", chat({ messages: [] }));
  assert.equal(status, 400);
  assert.equal(body.error.param, "messages");
});

test("missing messages → 400", async () => {
  const { status, body } = await post("/v1/chat/completions", { model: MODEL });
  assert.equal(status, 400);
  assert.equal(body.error.param, "messages");
});

test("unknown model → 404 model_not_found, as the openai client's NotFoundError", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }),
    (e: unknown) => e instanceof OpenAI.NotFoundError && e.code === "model_not_found" && e.param === "model",
  );
});

test("negative max_tokens → 400", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: -5 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.param === "max_tokens",
  );
});

test("max_tokens beyond the context → 400", async () => {
  const { status, body } = await post("/v1/completions", { model: MODEL, prompt: "hello", max_tokens: CONTEXT * 10 });
  assert.equal(status, 400);
  assert.equal(body.error.param, "max_tokens");
  assert.match(body.error.message, /maximum context length is 256/);
});

test("a prompt longer than the context → 400 context_length_exceeded", async () => {
  await assert.rejects(
    client.completions.create({ model: MODEL, prompt: Array.from({ length: CONTEXT + 10 }, () => 65), max_tokens: 1 }),
    (e: unknown) => e instanceof OpenAI.BadRequestError && e.code === "context_length_exceeded",
  );
});

test("a body over --max-body-bytes → 413 naming the flag, declared or streamed", async () => {
  // Regression: oversize bodies got 400, and the limit (32 MiB) had no flag.
  const big = JSON.stringify(chat({ messages: [{ role: "user", content: "x".repeat(BODY_LIMIT) }] }));
  const declared = await post("/v1/chat/completions", big);
  assert.equal(declared.status, 413);
  assert.equal(declared.body.error.code, "request_too_large");
  assert.match(declared.body.error.message, /limit of 65536 bytes .*--max-body-bytes/);
  const chunks = new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(big));
      controller.close();
    },
  });
  const streamed = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: chunks,
    duplex: "half",
  } as RequestInit);
  assert.equal(streamed.status, 413);
  assert.equal(((await streamed.json()) as ErrorBody).error.code, "request_too_large");
});

test("a body far over the limit still gets its 413, not a reset, and the server reads no more than a few seconds of it", async () => {
  // Regression: the server closed the connection while the body was still arriving, and the
  // client's unread bytes made the kernel reset it before the 413 was read.
  const body = JSON.stringify(chat({ messages: [{ role: "user", content: "x".repeat(4 * 1024 * 1024) }] }));
  for (let i = 0; i < 5; i++) {
    const outcome = await rawRequest(
      server.url,
      [
        `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`,
        body,
      ],
      { timeoutMs: 10_000 },
    );
    assert.equal(outcome.kind, "response", `attempt ${i}: ${JSON.stringify(outcome).slice(0, 200)}`);
    assert.equal(outcome.kind === "response" && outcome.status, 413);
  }
});

test("a prompt that cannot fit is refused before the template renders it", async () => {
  // Regression: the whole body was templated and tokenized before the context-length check.
  const { status, body } = await post(
    "/v1/chat/completions",
    chat({ messages: [{ role: "user", content: "y".repeat(60_000) }] }),
  );
  assert.equal(status, 400);
  assert.equal(body.error.code, "context_length_exceeded");
  assert.match(body.error.message, /the prompt has at least \d+ \(60000 bytes of text\)/);
});

test("stop strings over 4 or over 512 characters → 400 naming stop", async () => {
  for (const stop of [["a", "b", "c", "d", "e"], ["z".repeat(513)]]) {
    const { status, body } = await post("/v1/chat/completions", chat({ stop }));
    assert.equal(status, 400);
    assert.equal(body.error.param, "stop");
  }
});

test("a tool of a type other than function, or a field no route knows → 400 naming it (docs/api.md)", async () => {
  const tools = await post("/v1/chat/completions", chat({ tools: [{ type: "web_search" }] }));
  assert.equal(tools.status, 400);
  assert.deepEqual([tools.body.error.param, tools.body.error.code], ["tools[0].type", "unsupported_parameter"]);
  const unknown = await post("/v1/completions", { model: MODEL, prompt: "hi", max_new_tokens: 3 });
  assert.equal(unknown.status, 400);
  assert.equal(unknown.body.error.message, "Unrecognized request argument supplied: max_new_tokens");
});

test("n above 128, or logit_bias and stop_token_ids outside the vocabulary → 400 naming them", async () => {
  const { status, body } = await post("/v1/chat/completions", chat({ n: 129 }));
  assert.equal(status, 400);
  assert.equal(body.error.param, "n");
  for (const [field, value] of [
    ["logit_bias", { "999999": 5 }],
    ["stop_token_ids", [999_999]],
  ] as const) {
    const refused = await post("/v1/chat/completions", chat({ [field]: value }));
    assert.deepEqual([refused.status, refused.body.error.param], [400, field]);
  }
});

test("stream_options without stream, token ids outside the vocabulary, unknown pinned worker → 400", async () => {
  assert.equal((await post("/v1/chat/completions", chat({ stream_options: { include_usage: true } }))).status, 400);
  assert.equal((await post("/v1/completions", { model: MODEL, prompt: [1, 999_999] })).body.error.param, "prompt");
  const pinned = await post("/v1/chat/completions", chat({ nvext: { backend_instance_id: "worker-nope" } }));
  assert.equal(pinned.status, 400);
  assert.equal(pinned.body.error.param, "nvext.backend_instance_id");
});

test("unknown route → 404, wrong method → 405, both OpenAI error objects", async () => {
  const missing = await fetch(`${server.url}/v1/nothing`);
  assert.equal(missing.status, 404);
  assertMatchesSchema("ErrorResponse", await missing.json());
  const wrong = await fetch(`${server.url}/v1/chat/completions`);
  assert.equal(wrong.status, 405);
  assertMatchesSchema("ErrorResponse", await wrong.json());
});

test("after all of that the server still serves", async () => {
  const result = await client.chat.completions.create(chat({}) as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assert.equal(result.object, "chat.completion");
});
