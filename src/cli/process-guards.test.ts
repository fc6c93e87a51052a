import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { invalidMessageLogger } from "./process-guards.js";

function recordingLogger() {
  const lines: { fields: Record<string, unknown>; message: string }[] = [];
  const logger = {
    ...silentLogger,
    child: () => logger,
    warn: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }),
  } as unknown as typeof silentLogger;
  return { logger, lines };
}

test("a flood of malformed messages logs one line per kind per interval, with the count dropped meanwhile", () => {
  const { logger, lines } = recordingLogger();
  const listener = invalidMessageLogger(logger, 60_000);
  for (let i = 0; i < 1000; i++) listener("kv-event-batch", "armature.kv_events.w1", new Error("events must be an array"));
  listener("worker-load", "armature.load.w1", new Error("workerId must be a string"));
  assert.equal(lines.length, 2);
  assert.deepEqual(lines[0]?.fields, {
    kind: "kv-event-batch",
    subject: "armature.kv_events.w1",
    problem: "events must be an array",
    droppedSinceLastLine: 0,
  });
  assert.equal(lines[1]?.fields.kind, "worker-load");
});

test("an unhandled rejection or an uncaught exception is logged and the process goes on", () => {
  // In a child process: node:test itself fails a test on an unhandled rejection in its own.
  const script = `
    import { installLastResortHandlers } from ${JSON.stringify(new URL("./process-guards.ts", import.meta.url).href)};
    const logger = { child: () => logger, error: (_f, m) => console.log("logged:", m), warn() {}, info() {}, debug() {} };
    installLastResortHandlers(logger);
    Promise.reject(new Error("boom"));
    setTimeout(() => { throw new Error("bang"); }, 10);
    setTimeout(() => console.log("still serving"), 50);
  `;
  const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(result.stdout.trim().split("\n"), [
    "logged: a promise rejection was not handled; the process keeps serving. Please report this with the stack",
    "logged: an exception was not caught; the process keeps serving. Please report this with the stack",
    "still serving",
  ]);
});
