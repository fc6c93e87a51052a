import assert from "node:assert/strict";
import { test } from "node:test";
import { replay } from "./replay.js";
import type { TraceRequest } from "./trace.js";

// A request every 100 ms for 8 s, each ~270 ms long (512-token prompt, 40 tokens out).
const trace: TraceRequest[] = Array.from({ length: 80 }, (_, i) => ({
  timestamp: i * 100,
  inputLength: 512,
  outputLength: 40,
  hashIds: [i],
}));
const options = { trace, policy: "round-robin", workers: 1, blockSize: 16, traceBlockSize: 512 } as const;

test("a worker added during a replay takes requests after its start-up delay; a removed one drains", async () => {
  const seen: Record<string, number> = {};
  const drainingLoad: number[] = [];
  const result = await replay({
    ...options,
    control: async ({ fleet, clock, signal }) => {
      const [first] = fleet.workers("aggregated") as [string];
      const adding = fleet.addWorker("aggregated", { startupMs: 2000 });
      assert.deepEqual(fleet.workers("aggregated"), [first], "still starting");
      const added = await adding;
      seen.addedAt = clock.now();
      assert.deepEqual(fleet.workers("aggregated"), [first, added]);
      await clock.sleep(1000, signal);
      const fresh = fleet.load(added);
      seen.addedBusy = (fresh?.activeRequests ?? 0) + (fresh?.waitingRequests ?? 0);
      await clock.sleep(1000, signal);
      const load = fleet.load(first);
      seen.inflightAtRemoval = (load?.activeRequests ?? 0) + (load?.waitingRequests ?? 0);
      seen.removedFrom = clock.now();
      const removing = fleet.removeWorker("aggregated", first);
      assert.deepEqual(fleet.workers("aggregated"), [added], "a draining worker takes no requests");
      const watching = (async () => {
        for (let now = fleet.load(first); now; now = fleet.load(first)) {
          drainingLoad.push(now.activeRequests + now.waitingRequests);
          await clock.sleep(10, signal);
        }
      })();
      await removing;
      seen.removedAt = clock.now();
      await watching;
      assert.equal(fleet.load(first), undefined, "gone once removed");
    },
  });
  assert.equal(seen.addedAt, 2000, "the worker registers after its start-up delay, on the clock");
  assert.ok((seen.addedBusy ?? 0) > 0, "the added worker serves requests");
  assert.ok((seen.inflightAtRemoval ?? 0) > 0, "the removed worker had requests in flight");
  assert.ok((seen.removedAt ?? 0) > (seen.removedFrom ?? 0), "removal waited for them");
  for (let i = 1; i < drainingLoad.length; i++) {
    assert.ok(
      (drainingLoad[i] as number) <= (drainingLoad[i - 1] as number),
      `the draining worker took a request: ${drainingLoad}`,
    );
  }
  assert.deepEqual([result.completed, result.rejected], [80, 0], "no request lost to the scaling");
});

test("removing the only worker of a role leaves later requests to fail, not to hang", async () => {
  const result = await replay({
    ...options,
    control: async ({ fleet, clock, signal }) => {
      await clock.sleep(3000, signal);
      await fleet.removeWorker("aggregated");
      assert.deepEqual(fleet.workers("aggregated"), []);
    },
  });
  assert.ok(result.completed >= 29 && result.completed <= 31, `completed ${result.completed}`);
  assert.equal(result.rejected, 0);
});
