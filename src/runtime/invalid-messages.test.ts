import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError, workerLoadSchema } from "../protocol/index.js";
import { InvalidMessages } from "./invalid-messages.js";

const malformedLoad = { type: "worker-load", workerId: 7, activeRequests: -1 };

test("the gate drops a malformed message, counts it by kind and tells its listener", () => {
  const heard: string[] = [];
  const gate = new InvalidMessages((kind, subject) => heard.push(`${kind} on ${subject}`));
  assert.equal(gate.accept("worker-load", workerLoadSchema, malformedLoad, "armature.load.w1"), undefined);
  assert.throws(
    () => gate.check("worker-load", workerLoadSchema, malformedLoad, "armature.load.w1"),
    (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID",
  );
  assert.equal(gate.counts.get("worker-load"), 2);
  assert.deepEqual(heard, ["worker-load on armature.load.w1", "worker-load on armature.load.w1"]);
});

test("an in-process gate hands on the very object it was given, unchecked", () => {
  const gate = new InvalidMessages(undefined, { inProcess: true });
  const load = {
    type: "worker-load",
    workerId: "w1",
    activeRequests: 1,
    waitingRequests: 0,
    activeKvBlocks: 2,
    totalKvBlocks: 8,
  };
  assert.equal(gate.accept("worker-load", workerLoadSchema, load), load);
  assert.equal(gate.check("worker-load", workerLoadSchema, load), load);
  assert.equal(gate.counts.size, 0);
});
