import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, test } from "node:test";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// --request-timeout: a request that runs past it ends with a clear error, wherever it is.
let server: ServeProcess;
const MODEL = "armature-mocker";

before(async () => {
  // The mocker at its modelled speed takes seconds for 2000 tokens; the deadline is one second.
  server = await startServe(["--engine", "mocker", "--request-timeout", "1"]);
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

const long = (stream: boolean) => ({ model: MODEL, prompt: "tell me everything", max_tokens: 2000, ignore_eos: true, stream });

async function post(body: object): Promise<Response> {
  return fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

test("a unary request past --request-timeout → 504 request_timeout", async () => {
  const res = await post(long(false));
  assert.equal(res.status, 504);
  const body = (await res.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, "request_timeout");
  assert.match(body.error.message, /deadline of 1 s/);
});

test("a stream past --request-timeout ends with an error event and [DONE]", async () => {
  const res = await post(long(true));
  assert.equal(res.status, 200);
  const events = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: "));
  assert.ok(events.length > 2, "some tokens came before the deadline");
  assert.equal(events.at(-1), "data: [DONE]");
  const last = JSON.parse((events.at(-2) as string).slice(6)) as { error?: { code: string } };
  assert.equal(last.error?.code, "request_timeout");
});

test("after timeouts the server serves a short request, and its metrics count them", async () => {
  const res = await post({ model: MODEL, prompt: "hi", max_tokens: 3 });
  assert.equal(res.status, 200);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(
    metrics,
    /armature_frontend_requests_total\{model="armature-mocker",endpoint="completions",request_type="unary",status="error",error_type="timeout"\} 1/,
  );
});

test("a client that stops reading is let go at the deadline: its connection is closed and nothing stays in flight", async () => {
  // Regression: the deadline aborted the generation, but the response waited for ever for a drain.
  // A stream far larger than the sockets' buffers (megabytes on loopback), so it must stall on the client.
  const fast = await startServe([
    "--engine",
    "mocker",
    "--speedup-ratio",
    "1000",
    "--request-timeout",
    "1",
    "--context-size",
    "400000",
  ]);
  const socket = connect(Number(new URL(fast.url).port), "127.0.0.1");
  try {
    const body = JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "go" }],
      max_tokens: 300000,
      ignore_eos: true,
      stream: true,
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    socket.pause(); // never reads: the server's socket buffer fills
    const inflight = async (): Promise<string> =>
      /armature_frontend_inflight_requests\{model="armature-mocker"\} (\d+)/.exec(
        await (await fetch(`${fast.url}/metrics`)).text(),
      )?.[1] ?? "0";
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await inflight(), "1", "the stream is in flight, stuck on the client");
    const deadline = Date.now() + 15_000;
    while ((await inflight()) !== "0" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    assert.equal(await inflight(), "0", "the request ended within the deadline and its grace");
  } finally {
    socket.destroy();
    assert.equal(await fast.stop("SIGTERM"), 0, fast.output());
  }
});
