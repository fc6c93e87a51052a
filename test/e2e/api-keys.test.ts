import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

const MODEL = "armature-mocker";
const secret = (name: string): string => `sk-${name}-${randomBytes(12).toString("hex")}`;
const KEYS = {
  alice: secret("alice"),
  aliceRotated: secret("alice2"),
  limited: secret("limited"),
  tokens: secret("tokens"),
  otherModel: secret("other"),
  single: secret("single"),
  fromEnv: secret("env"),
};

function keysFile(aliceKey: string): string {
  return `# keys for the api-keys e2e test
- key: ${aliceKey}
  name: alice
- key: ${KEYS.limited}
  name: limited
  requests_per_minute: 2
- key: ${KEYS.tokens}
  name: tokens
  tokens_per_minute: 5
- key: ${KEYS.otherModel}
  name: other-only
  models: [some-other-model]
- key: ${KEYS.single}
  name: single
  max_concurrent: 1
`;
}

let server: ServeProcess;
let file: string;

before(async () => {
  file = join(await mkdtemp(join(tmpdir(), "armature-keys-")), "keys.yaml");
  await writeFile(file, keysFile(KEYS.alice));
  server = await startServe(["--engine", "mocker", "--speedup-ratio", "5", "--api-keys-file", file], {
    ARMATURE_API_KEY: KEYS.fromEnv,
  });
});

after(async () => {
  assert.equal(await server.stop(), 0);
});

const client = (apiKey: string): OpenAI => new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });
const ask = (apiKey: string, model = MODEL) =>
  client(apiKey).chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 3 });

async function rejection(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIError, String(error));
    return error;
  }
  assert.fail("the request succeeded");
}

test("a right key is served, from the file, the environment or the x-api-key header", async () => {
  const completion = await ask(KEYS.alice);
  assert.equal(completion.choices[0]?.finish_reason, "length");
  assert.equal((await ask(KEYS.fromEnv)).object, "chat.completion");
  const res = await fetch(`${server.url}/v1/models`, { headers: { "x-api-key": KEYS.alice } });
  assert.equal(res.status, 200);
  assert.deepEqual(
    ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id),
    [MODEL],
  );
});

test("a wrong key raises AuthenticationError: 401 invalid_api_key with a Bearer challenge", async () => {
  const error = await rejection(ask(`${KEYS.alice}x`));
  assert.ok(error instanceof OpenAI.AuthenticationError);
  assert.equal(error.status, 401);
  assert.equal(error.code, "invalid_api_key");
  assert.equal(error.type, "invalid_request_error");
  assert.equal(error.headers?.get("www-authenticate"), 'Bearer realm="armature", error="invalid_token"');
});

test("no key is 401 with OpenAI's error body; health, liveness and metrics stay open", async () => {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("www-authenticate"), 'Bearer realm="armature"');
  const body = (await res.json()) as { error: Record<string, unknown> };
  assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  assert.deepEqual([body.error.type, body.error.param, body.error.code], ["invalid_request_error", null, "invalid_api_key"]);
  assert.equal((await fetch(`${server.url}/v1/models`)).status, 401);
  for (const path of ["/health", "/live", "/metrics"]) assert.equal((await fetch(`${server.url}${path}`)).status, 200, path);
});

test("a key over its requests per minute gets RateLimitError with Retry-After", async () => {
  await ask(KEYS.limited);
  await ask(KEYS.limited);
  const error = await rejection(ask(KEYS.limited));
  assert.ok(error instanceof OpenAI.RateLimitError);
  assert.equal(error.code, "rate_limit_exceeded");
  assert.equal(error.type, "requests");
  // 2 per minute: the next one is back 30 s after the bucket emptied
  const retryAfter = Number(error.headers?.get("retry-after"));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 25 && retryAfter <= 30, String(retryAfter));
});

test("a key whose tokens per minute are spent is refused up front, type tokens", async () => {
  const first = await ask(KEYS.tokens); // prompt + 3 completion tokens: more than 5
  assert.ok((first.usage?.total_tokens ?? 0) > 5);
  const error = await rejection(ask(KEYS.tokens));
  assert.ok(error instanceof OpenAI.RateLimitError);
  assert.equal(error.type, "tokens");
  assert.ok(Number(error.headers?.get("retry-after")) >= 1);
});

test("a key restricted to another model gets model_not_found and does not see the model listed", async () => {
  const error = await rejection(ask(KEYS.otherModel));
  assert.ok(error instanceof OpenAI.NotFoundError);
  assert.equal(error.code, "model_not_found");
  const models = await client(KEYS.otherModel).models.list();
  assert.deepEqual(models.data, []);
});

test("max_concurrent holds one request at a time and frees the slot when the client goes away", async () => {
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEYS.single}` },
    body: JSON.stringify({ model: MODEL, prompt: "hello", max_tokens: 5000, stream: true }),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  await res.body?.getReader().read();
  const error = await rejection(ask(KEYS.single));
  assert.equal(error.status, 429);
  assert.equal(error.type, "requests");
  controller.abort();
  let served: string | undefined;
  for (let i = 0; i < 100 && served === undefined; i++) {
    served = await ask(KEYS.single).then(
      (c) => c.object,
      () => undefined,
    );
    if (served === undefined) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(served, "chat.completion");
  // a response that ends frees its slot too (the client keeps its connection open)
  assert.equal((await ask(KEYS.single)).object, "chat.completion");
  assert.equal((await ask(KEYS.single)).object, "chat.completion");
});

test("/metrics counts usage by key name and never shows a key", async () => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(text, /armature_frontend_api_key_requests_total\{key_name="alice",status="200"\} [1-9]/);
  assert.match(text, /armature_frontend_api_key_tokens_total\{key_name="alice",kind="completion"\} [1-9]/);
  assert.match(text, /armature_frontend_api_key_rejected_total\{key_name="limited",reason="requests_per_minute"\} 1/);
  assert.match(text, /armature_frontend_api_key_rejected_total\{key_name="",reason="invalid_key"\} [1-9]/);
  assert.match(text, /armature_frontend_api_key_rejected_total\{key_name="",reason="missing_key"\} [1-9]/);
  assert.match(text, /armature_frontend_api_key_requests_total\{key_name="api-key-1",status="200"\} 1/);
  for (const key of Object.values(KEYS)) assert.ok(!text.includes(key), "a key appears in /metrics");
  assert.ok(!server.output().includes("sk-"), "a key appears in the log");
});

test("SIGHUP reloads the keys file; a bad file keeps the keys in force and logs why", async () => {
  await writeFile(file, keysFile(KEYS.aliceRotated));
  server.child.kill("SIGHUP");
  let status = 0;
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = await ask(KEYS.aliceRotated).then(
      () => 200,
      (e: InstanceType<typeof OpenAI.APIError>) => e.status ?? 0,
    );
    if (status !== 200) await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(status, 200);
  assert.equal((await rejection(ask(KEYS.alice))).status, 401);

  await writeFile(file, `- {key: ${KEYS.alice}, name: alice, requests_per_minut: 5}\n`);
  server.child.kill("SIGHUP");
  for (let i = 0; i < 100 && !server.output().includes("API keys not reloaded"); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(server.output(), /unknown field 'requests_per_minut'.*API keys not reloaded; the previous keys stay in force/);
  assert.equal((await ask(KEYS.aliceRotated)).object, "chat.completion");
  assert.equal((await rejection(ask(KEYS.alice))).status, 401);
  assert.ok(!server.output().includes("sk-"), "a key appears in the log");
  assert.equal(server.child.exitCode, null);
});
