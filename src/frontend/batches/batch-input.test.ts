import assert from "node:assert/strict";
import { test } from "node:test";
import { readBatchInput } from "./batch-input.js";

const line = (customId: string, body: object = { model: "m" }, url = "/v1/completions"): string =>
  JSON.stringify({ custom_id: customId, method: "POST", url, body });

test("each good line becomes an entry with its 1-based line; blank lines are skipped", () => {
  const { entries, rejected } = readBatchInput(`${line("a")}\n\n${line("b", { model: "m", prompt: "x" })}\n`, "/v1/completions");
  assert.deepEqual(rejected, []);
  assert.deepEqual(entries, [
    { line: 1, customId: "a", body: { model: "m" } },
    { line: 3, customId: "b", body: { model: "m", prompt: "x" } },
  ]);
});

test("each bad line is rejected naming its line and field, and the others still run", () => {
  const text = [
    line("ok"),
    "[1, 2]",
    JSON.stringify({ method: "POST", url: "/v1/completions", body: {} }),
    JSON.stringify({ custom_id: "x", method: "GET", url: "/v1/completions", body: {} }),
    line("y", {}, "/v1/chat/completions"),
    JSON.stringify({ custom_id: "z", method: "POST", url: "/v1/completions", body: [] }),
    JSON.stringify({ custom_id: "w", method: "POST", url: "/v1/completions", body: {}, extra: 1 }),
    line("ok"),
    line("s", { stream: true }),
    line("p", { priority: 0 }),
    line("ok2"),
  ].join("\n");
  const { entries, rejected } = readBatchInput(text, "/v1/completions");
  assert.deepEqual(
    entries.map((e) => [e.line, e.customId]),
    [
      [1, "ok"],
      [11, "ok2"],
    ],
  );
  assert.deepEqual(
    rejected.map((r) => [r.line, r.param, r.customId]),
    [
      [2, null, null],
      [3, "custom_id", null],
      [4, "method", "x"],
      [5, "url", "y"],
      [6, "body", "z"],
      [7, "extra", "w"],
      [8, "custom_id", "ok"],
      [9, "body.stream", "s"],
      [10, "body.priority", "p"],
    ],
  );
  for (const r of rejected) assert.match(r.message, new RegExp(`^line ${r.line}: `));
});
