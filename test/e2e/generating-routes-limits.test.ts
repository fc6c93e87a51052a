import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Anthropic, { AuthenticationError, NotFoundError } from "@anthropic-ai/sdk";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// POST /v1/messages and POST /v1/responses under API keys and --request-timeout (the mocker at its
// modelled speed takes seconds for 2000 tokens; the deadline is one second): refusals and
// deadlines in each API's own shape, and the requests counted under their endpoints.
const MODEL = "armature-mocker";
const ALICE = `sk-alice-${randomBytes(12).toString("hex")}`;
const OTHER = `sk-other-${randomBytes(12).toString("hex")}`;
let server: ServeProcess;

before(async () => {
  const file = join(await mkdtemp(join(tmpdir(), "armature-keys-")), "keys.yaml");
  await writeFile(file, `- key: ${ALICE}\n  name: alice\n- key: ${OTHER}\n  name: other-only\n  models: [some-other-model]\n`);
  server = await startServe(["--engine", "mocker", "--request-timeout", "1", "--api-keys-file", file]);
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

const anthropic = (apiKey: string): Anthropic => new Anthropic({ baseURL: server.url, apiKey, maxRetries: 0 });
const hi = { model: MODEL, max_tokens: 3, messages: [{ role: "user" as const, content: "hi" }] };

async function post(path: string, body: unknown, key = ALICE): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** The named events of an SSE body, in order. */
function namedEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      const [eventLine, dataLine] = block.split("\n");
      return { event: eventLine?.replace(/^event: /, "") ?? "", data: JSON.parse(dataLine?.replace(/^data: /, "") ?? "") };
    });
}

test("Anthropic's SDK sends its key as x-api-key; a wrong key is 401 and a key without the model 404, in Anthropic's shape", async () => {
  const message = await anthropic(ALICE).messages.create(hi);
  assert.equal(message.type, "message");
  const denied = await anthropic("sk-wrong")
    .messages.create(hi)
    .catch((e: unknown) => e);
  assert.ok(denied instanceof AuthenticationError, String(denied));
  assert.deepEqual((denied.error as { type: string; error: { type: string } }).error.type, "authentication_error");
  assert.equal((denied.error as { type: string }).type, "error");
  const counted = await anthropic("sk-wrong")
    .messages.countTokens({ model: MODEL, messages: hi.messages })
    .catch((e: unknown) => e);
  assert.ok(counted instanceof AuthenticationError, String(counted));
  const hidden = await anthropic(OTHER)
    .messages.create(hi)
    .catch((e: unknown) => e);
  assert.ok(hidden instanceof NotFoundError, String(hidden));
  assert.equal((hidden.error as { error: { type: string } }).error.type, "not_found_error");
});

test("past --request-timeout a message is 504 timeout_error, and a streamed one ends with an error event", async () => {
  const long = { model: MODEL, max_tokens: 2000, messages: [{ role: "user", content: "tell me everything" }] };
  const unary = await post("/v1/messages", long);
  assert.equal(unary.status, 504);
  const body = JSON.parse(unary.text) as { type: string; error: { type: string; message: string } };
  assert.deepEqual([body.type, body.error.type], ["error", "timeout_error"]);
  assert.match(body.error.message, /deadline of 1 s/);
  const streamed = namedEvents((await post("/v1/messages", { ...long, stream: true })).text);
  assert.ok(
    streamed.some((e) => e.event === "content_block_delta"),
    "some text came before the deadline",
  );
  const last = streamed.at(-1);
  assert.equal(last?.event, "error");
  assert.deepEqual(last?.data.error, {
    type: "timeout_error",
    message:
      "the request took longer than its deadline of 1 s (this server's --request-timeout, or the client's x-armature-deadline-ms when sooner)",
  });
});

test("past --request-timeout a streamed response ends with an error event that continues the numbering", async () => {
  const res = await post("/v1/responses", { model: MODEL, input: "tell me everything", max_output_tokens: 2000, stream: true });
  assert.equal(res.status, 200);
  const events = namedEvents(res.text);
  assert.ok(events.some((e) => e.event === "response.output_text.delta"));
  const last = events.at(-1);
  assert.equal(last?.event, "error");
  assert.deepEqual(
    [last?.data.type, last?.data.code, last?.data.sequence_number],
    ["error", "request_timeout", events.length - 1],
  );
  const unary = await post("/v1/responses", { model: MODEL, input: "tell me everything", max_output_tokens: 2000 });
  assert.equal(unary.status, 504);
  assert.equal((JSON.parse(unary.text) as { error: { code: string } }).error.code, "request_timeout");
});

test("the routes' requests are counted under endpoint messages and responses", async () => {
  assert.equal((await post("/v1/responses", { model: MODEL, input: "hi", max_output_tokens: 3 })).status, 200);
  const metrics = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${ALICE}` } })).text();
  assert.match(
    metrics,
    /requests_total\{model="armature-mocker",endpoint="messages",request_type="unary",status="success",error_type=""\} 1/,
  );
  assert.match(
    metrics,
    /requests_total\{model="armature-mocker",endpoint="messages",request_type="stream",status="error",error_type="timeout"\} 1/,
  );
  assert.match(
    metrics,
    /requests_total\{model="armature-mocker",endpoint="responses",request_type="unary",status="success",error_type=""\} 1/,
  );
});
