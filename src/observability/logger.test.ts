import assert from "node:assert/strict";
import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createLogger, type Logger, lazyChild } from "./logger.js";

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

test("a lazy child writes what a child writes, and is made only when a line is written at a level the parent writes", () => {
  const made: Record<string, unknown>[] = [];
  const lines: unknown[] = [];
  const parentOf = (bindings: Record<string, unknown>): Logger => ({
    debug: () => {},
    info: (first: unknown, message?: string) => lines.push({ bindings, first, message }),
    warn: () => {},
    error: () => {},
    child: (more) => {
      made.push(more);
      return parentOf({ ...bindings, ...more });
    },
    isLevelEnabled: (level) => level !== "debug",
  });
  const child = lazyChild(parentOf({}), { requestId: "r1" });
  child.debug("not written at this level");
  child.child({ endpoint: "chat" }).debug({ x: 1 }, "nor this");
  assert.deepEqual(made, []);
  child.info({ status: 400 }, "request rejected");
  child.info("again");
  assert.deepEqual(made, [{ requestId: "r1" }]);
  assert.deepEqual(lines, [
    { bindings: { requestId: "r1" }, first: { status: 400 }, message: "request rejected" },
    { bindings: { requestId: "r1" }, first: "again", message: undefined },
  ]);
});
