import assert from "node:assert/strict";
import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createLogger } from "./logger.js";

test("API keys are redacted from logged headers and options", async () => {
  const path = join(await mkdtemp(join(tmpdir(), "armature-log-")), "log.jsonl");
  const fd = openSync(path, "w");
  const logger = createLogger({ destination: fd, level: "info" });
  logger.info({ headers: { authorization: "Bearer sk-one", "x-api-key": "sk-two", accept: "*/*" } }, "incoming");
  logger.info({ req: { headers: { "x-api-key": "sk-three" } }, apiKeys: ["sk-four"] }, "more");
  let text = "";
  for (let i = 0; i < 50 && text.split("\n").length < 3; i++) {
    await new Promise((r) => setTimeout(r, 20));
    text = readFileSync(path, "utf8");
  }
  closeSync(fd);
  const [first, second] = text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
  assert.deepEqual(first.headers, { authorization: "[redacted]", "x-api-key": "[redacted]", accept: "*/*" });
  assert.deepEqual([second.req.headers["x-api-key"], second.apiKeys], ["[redacted]", "[redacted]"]);
  assert.ok(!text.includes("sk-"));
});
