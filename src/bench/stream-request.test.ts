import assert from "node:assert/strict";
import { once } from "node:events";
import { Agent, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { SseLineReader } from "../protocol/index.js";
import { streamCompletion } from "./stream-request.js";

/** Serves one fixed response body as an SSE stream; `cut` drops the connection after it instead of ending. */
async function withServer(body: string, run: (url: string) => Promise<void>, options: { status?: number; cut?: boolean } = {}) {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(options.status ?? 200, { "content-type": "text/event-stream" });
      if (options.cut) {
        res.write(body);
        setTimeout(() => res.destroy(), 20);
      } else res.end(body);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

const chunk = (text: string, finish: string | null) =>
  `data: {"object":"text_completion","choices":[{"index":0,"text":${JSON.stringify(text)},"finish_reason":${JSON.stringify(finish)}}]}\n\n`;
const usage = (completion: number) =>
  `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":${completion},"total_tokens":${5 + completion},"prompt_tokens_details":{"cached_tokens":2}}}\n\n`;

test("tokens come from usage, not from events: the finish chunk and the usage chunk are no tokens", async () => {
  // Two text chunks carry three tokens between them (a server may send several tokens in one event).
  const body = `${chunk(" a b", null)}${chunk(" c", null)}${chunk("", "length")}${usage(3)}data: [DONE]\n\n`;
  await withServer(body, async (url) => {
    const t = await streamCompletion(url, { model: "m", prompt: "x" }, new Agent());
    assert.equal(t.ok, true, t.error);
    assert.equal(t.completionTokens, 3);
    assert.equal(t.usageReported, true);
    assert.equal(t.promptTokens, 5);
    assert.equal(t.cachedTokens, 2);
    assert.ok(t.ttftMs >= 0 && t.latencyMs >= t.ttftMs);
  });
});

test("a stream that ends in an error event is not completed", async () => {
  const body = `${chunk(" a", null)}data: {"error":{"message":"the worker failed this request"}}\n\ndata: [DONE]\n\n`;
  await withServer(body, async (url) => {
    const t = await streamCompletion(url, { model: "m", prompt: "x" }, new Agent());
    assert.equal(t.ok, false);
    assert.equal(t.error, "the worker failed this request");
  });
});

test("a stream cut before [DONE] is not completed", async () => {
  await withServer(
    `${chunk(" a", null)}${chunk(" b", null)}`,
    async (url) => {
      const t = await streamCompletion(url, { model: "m", prompt: "x" }, new Agent());
      assert.equal(t.ok, false);
    },
    { cut: true },
  );
});

test("a non-200 answer is a failure named by its status", async () => {
  await withServer(
    '{"error":{"message":"no"}}',
    async (url) => {
      const t = await streamCompletion(url, { model: "m", prompt: "x" }, new Agent());
      assert.equal(t.ok, false);
      assert.equal(t.error, "HTTP 429");
    },
    { status: 429 },
  );
});

test("without usage, tokens are the text chunks and the timing says so", async () => {
  await withServer(`${chunk(" a", null)}${chunk(" b", null)}${chunk("", "stop")}data: [DONE]\n\n`, async (url) => {
    const t = await streamCompletion(url, { model: "m", prompt: "x" }, new Agent());
    assert.equal(t.ok, true);
    assert.equal(t.completionTokens, 2);
    assert.equal(t.usageReported, false);
  });
});

test("the SSE reader joins data lines, skips comments and other fields, and takes pieces cut anywhere", () => {
  // An event stream as the SSE specification's examples write them: CRLF, a comment, an event name,
  // a two-line data field.
  const stream = ': keep-alive\r\nevent: message\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata:[DONE]\n\n';
  for (let cut = 0; cut <= stream.length; cut++) {
    const reader = new SseLineReader();
    const events = [...reader.push(stream.slice(0, cut)), ...reader.push(stream.slice(cut))];
    assert.deepEqual(events, ['{"a":\n1}', "[DONE]"], `cut at ${cut}`);
  }
});
