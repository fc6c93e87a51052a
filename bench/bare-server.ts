// The baseline: a bare node:http server that answers every request with one fixed SSE body of
// the same shape as armature's streamed completions with usage asked for (the load generator always
// asks: it counts tokens from usage). Prints its URL.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const tokens = Number(process.argv[2] ?? 16);
const chunk = (text: string, finish: string | null): string =>
  `data: ${JSON.stringify({ id: "cmpl-x", object: "text_completion", created: 0, model: "m", choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] })}\n\n`;
const usage = `data: ${JSON.stringify({ id: "cmpl-x", object: "text_completion", created: 0, model: "m", choices: [], usage: { prompt_tokens: 1, completion_tokens: tokens, total_tokens: tokens + 1 } })}\n\n`;
const body = `${Array.from({ length: tokens }, (_, i) => chunk(` t${i}`, null)).join("")}${chunk("", "length")}${usage}data: [DONE]\n\n`;

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`bare server at http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
