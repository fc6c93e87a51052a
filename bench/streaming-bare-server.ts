// The streaming baseline: a bare node:http server that does what any relay of a token-by-token
// engine must do and nothing more. It reads and parses the JSON body, then writes each SSE event of
// a streamed `/v1/completions` answer (the same bytes armature sends: one chunk per token, the
// finishing chunk, the usage chunk, `[DONE]`) one event-loop turn apart, as an engine that yields
// one token per step hands them over, waiting for `drain` when the socket's buffer is full.
// `max_tokens` in the body sets the token count (default 16). Prints its URL.
import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function write(res: ServerResponse, text: string): Promise<void> {
  if (!res.write(text)) await new Promise((resolve) => res.once("drain", resolve));
}

async function stream(res: ServerResponse, body: { model?: unknown; max_tokens?: unknown }): Promise<void> {
  const tokens = typeof body.max_tokens === "number" ? body.max_tokens : 16;
  const model = typeof body.model === "string" ? body.model : "m";
  const requestId = randomUUID();
  const id = `cmpl-${requestId}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (text: string, finish: string | null): string =>
    `data: ${JSON.stringify({ id, object: "text_completion", created, model, choices: [{ index: 0, text, logprobs: null, finish_reason: finish }], usage: null })}\n\n`;
  res.writeHead(200, {
    "x-request-id": requestId,
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  for (let i = 0; i < tokens; i++) {
    await nextTurn();
    if (res.destroyed) return;
    await write(res, chunk(" t", null));
  }
  await nextTurn();
  const usage = {
    prompt_tokens: 1,
    completion_tokens: tokens,
    total_tokens: tokens + 1,
    prompt_tokens_details: { cached_tokens: 0 },
  };
  res.write(chunk("", "length"));
  res.write(`data: ${JSON.stringify({ id, object: "text_completion", created, model, choices: [], usage })}\n\n`);
  res.end("data: [DONE]\n\n");
}

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (part: Buffer) => parts.push(part));
  req.on("end", () => {
    let body: { model?: unknown; max_tokens?: unknown };
    try {
      body = JSON.parse(Buffer.concat(parts).toString("utf8"));
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"body is not JSON"}}');
      return;
    }
    stream(res, body).catch(() => res.destroy());
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`streaming bare server at http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
