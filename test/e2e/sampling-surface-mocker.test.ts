import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema } from "../helpers/openai-spec.js";

// The mocker's part of the sampling surface: it honours n, echo, prompt batches, stop_token_ids and
// min_tokens (its text is a fixed function of the prompt), and refuses by name what needs token
// probabilities it does not have (logprobs, logit_bias, best_of above n).
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-mocker";
const PROMPT = "Once upon a time";

before(async () => {
  server = await startServe(["--engine", "mocker", "--speedup-ratio", "100"]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

interface Answer {
  readonly status: number;
  readonly body: { error: { param: string; code: string }; tokens: number[] };
}

async function post(path: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

test("logprobs, logit_bias and best_of above n are refused by name on the mocker", async () => {
  const chat = { model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2 };
  const text = { model: MODEL, prompt: PROMPT, max_tokens: 2 };
  const cases: [string, Record<string, unknown>, string][] = [
    ["/v1/chat/completions", { ...chat, logprobs: true }, "logprobs"],
    ["/v1/chat/completions", { ...chat, logprobs: true, top_logprobs: 2, n: 2 }, "logprobs"],
    ["/v1/chat/completions", { ...chat, logit_bias: { "5": 10 } }, "logit_bias"],
    ["/v1/completions", { ...text, logprobs: 1 }, "logprobs"],
    ["/v1/completions", { ...text, best_of: 2 }, "best_of"],
  ];
  for (const [path, body, param] of cases) {
    const res = await post(path, body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.error.param, param);
    assert.equal(res.body.error.code, "unsupported_parameter");
  }
});

test("n, echo and a batch of prompts on the mocker", async () => {
  const data = await client.completions.create({
    model: MODEL,
    prompt: [PROMPT, "The end"],
    n: 2,
    max_tokens: 4,
    echo: true,
  });
  assertMatchesSchema("CreateCompletionResponse", data);
  assert.deepEqual(
    data.choices.map((c) => c.index),
    [0, 1, 2, 3],
  );
  const texts = data.choices.map((c) => c.text);
  assert.ok(texts[0]?.startsWith(PROMPT) && texts[2]?.startsWith("The end"));
  // The mocker's text depends on the prompt only: a prompt's choices are equal.
  assert.equal(texts[0], texts[1]);
  assert.equal(texts[2], texts[3]);
  assert.equal(data.usage?.completion_tokens, 16);
});

test("stop_token_ids ends the mocker's text at the token, and not before min_tokens", async () => {
  const full = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 12 });
  const text = full.choices[0]?.text ?? "";
  const ids = (await post("/tokenize", { model: MODEL, prompt: text })).body.tokens;
  assert.equal(ids.length, 12, "the mocker's words each tokenize back to one token");
  const stop = ids[2] as number;
  const firstAt = ids.indexOf(stop);
  const stopped = await client.completions.create({
    model: MODEL,
    prompt: PROMPT,
    max_tokens: 12,
    stop_token_ids: [stop],
  } as OpenAI.CompletionCreateParamsNonStreaming);
  assert.equal(stopped.usage?.completion_tokens, firstAt + 1);
  assert.equal(stopped.choices[0]?.finish_reason, "stop");
  assert.ok(text.startsWith(stopped.choices[0]?.text ?? "?"));
  const held = await client.completions.create({
    model: MODEL,
    prompt: PROMPT,
    max_tokens: 12,
    stop_token_ids: [stop],
    min_tokens: firstAt + 1,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  const nextAt = ids.indexOf(stop, firstAt + 1);
  assert.equal(held.usage?.completion_tokens, nextAt === -1 ? 12 : nextAt + 1);
  assert.equal(held.choices[0]?.finish_reason, nextAt === -1 ? "length" : "stop");
});
