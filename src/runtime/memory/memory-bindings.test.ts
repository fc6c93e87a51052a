import assert from "node:assert/strict";
import { test } from "node:test";
import { VirtualClock } from "../clock.js";
import { discoveryContract } from "../contracts/discovery-contract.js";
import { eventPlaneContract } from "../contracts/event-plane-contract.js";
import { requestPlaneContract } from "../contracts/request-plane-contract.js";
import { subjectMatches } from "../event-plane.js";
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
