import assert from "node:assert/strict";
import { test } from "node:test";
import { VirtualClock } from "../clock.js";
import { discoveryContract } from "../contracts/discovery-contract.js";
import { eventPlaneContract } from "../contracts/event-plane-contract.js";
import { requestPlaneContract } from "../contracts/request-plane-contract.js";
import { subjectMatches } from "../event-plane.js";
import { deliveringHandler } from "../request-plane.js";
import type { StreamSink } from "../stream-sink.js";
import { MemoryDiscovery } from "./memory-discovery.js";
import { MemoryEventPlane } from "./memory-event-plane.js";
import { MemoryRequestPlane } from "./memory-request-plane.js";

discoveryContract("memory discovery", async () => {
  const clock = new VirtualClock();
  const discovery = new MemoryDiscovery({ clock, sweepIntervalMs: 0 });
  return { discovery, passTime: (ms) => clock.advance(ms), close: () => discovery.close() };
});

requestPlaneContract("memory request plane", async () => {
  const plane = new MemoryRequestPlane();
  return { plane, close: () => plane.close() };
});

eventPlaneContract("memory event plane", async () => {
  const events = new MemoryEventPlane();
  return { events, close: () => events.close() };
});

test("subject wildcards follow NATS rules", () => {
  assert.equal(subjectMatches("a.*.c", "a.b.c"), true);
  assert.equal(subjectMatches("a.*", "a.b.c"), false);
  assert.equal(subjectMatches("a.>", "a"), false);
  assert.equal(subjectMatches("a.>", "a.b.c"), true);
  assert.equal(subjectMatches("a.b", "a.b"), true);
});

test("in one process a delivering handler's push reaches the caller's sink in the same call, and stop() reaches the handler", async () => {
  const plane = new MemoryRequestPlane();
  let handlerSink: StreamSink<unknown> | undefined;
  let handlerSignal: AbortSignal | undefined;
  let stopped = false;
  await plane.serve(
    "w1",
    deliveringHandler((_payload, { signal }, sink) => {
      handlerSink = sink;
      handlerSignal = signal;
      return {
        stop: async () => {
          stopped = true;
        },
      };
    }),
  );
  const got: unknown[] = [];
  const delivery = plane.open(
    "w1",
    {},
    { push: (item) => got.push(item), end: () => got.push("end"), fail: () => got.push("fail") },
  );
  assert.ok(handlerSink, "the handler starts at open");
  handlerSink.push("token");
  assert.deepEqual(got, ["token"], "no promise between the handler and the caller");
  await delivery.stop();
  assert.equal(stopped, true);
  assert.equal(handlerSignal?.aborted, true, "the handler's signal says it was cancelled");
  assert.deepEqual(got, ["token"]);
});

test("a pulling caller reads a delivering handler through the same call, and a handler that refuses at once fails the sink", async () => {
  const plane = new MemoryRequestPlane();
  await plane.serve(
    "w1",
    deliveringHandler((_payload, _context, sink) => {
      queueMicrotask(() => {
        sink.push(1);
        sink.push(2);
        sink.end();
      });
      return { stop: async () => undefined };
    }),
  );
  const items: unknown[] = [];
  for await (const item of plane.call("w1", {})) items.push(item);
  assert.deepEqual(items, [1, 2]);
  await plane.serve(
    "refuses",
    deliveringHandler(() => {
      throw new Error("draining");
    }),
  );
  const outcome = await new Promise<string>((resolve) =>
    plane.open("refuses", {}, { push: () => resolve("item"), end: () => resolve("end"), fail: (e) => resolve(String(e)) }),
  );
  assert.equal(outcome, "Error: draining");
});
