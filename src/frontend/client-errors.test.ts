import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { test } from "node:test";
import { answerClientError } from "./client-errors.js";

async function answerTo(bytes: string): Promise<{ status: number; body: unknown }> {
  const server = createServer((_req, res) => res.end("served")).on("clientError", answerClientError);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
    socket.end(bytes);
    let text = "";
    for await (const chunk of socket) text += (chunk as Buffer).toString("latin1");
    const [head = "", body = ""] = text.split("\r\n\r\n");
    return { status: Number(head.split(" ")[1]), body: JSON.parse(body) };
  } finally {
    server.close();
  }
}

// Regression: requests Node's parser refused got a bare status line without an OpenAI error body.
test("a malformed Content-Length gets a 400 with an OpenAI error body", async () => {
  const { status, body } = await answerTo("POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n{}");
  assert.equal(status, 400);
  assert.equal((body as { error: { type: string } }).error.type, "invalid_request_error");
});

test("headers over the size limit get a 431 with an OpenAI error body", async () => {
  const { status, body } = await answerTo(`GET /health HTTP/1.1\r\nhost: x\r\nx-huge: ${"h".repeat(100_000)}\r\n\r\n`);
  assert.equal(status, 431);
  assert.match((body as { error: { message: string } }).error.message, /max-http-header-size/);
});
