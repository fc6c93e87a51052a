import assert from "node:assert/strict";
import { test } from "node:test";
import { silentLogger } from "../observability/index.js";
import { type Discovery, MemoryDiscovery, VirtualClock } from "../runtime/index.js";
import { PlannerLease } from "./planner-lease.js";

test("one planner acts at a time; a standby takes over within the claim's TTL once the acting one stops renewing, and at once on its close", async () => {
  const clock = new VirtualClock();
  const discovery = new MemoryDiscovery({ clock, sweepIntervalMs: 0 });
  // What a's process does to the store: renewals and claims stop when it "dies" (SIGKILL: nothing is revoked).
  let aAlive = true;
  const aStore: Discovery = Object.create(discovery, {
    claim: {
      value: async (name: string, holder: string, options: { ttlMs: number }) => {
        if (!aAlive) return undefined;
        const lease = await discovery.claim(name, holder, options);
        return lease && { ...lease, keepAlive: async () => aAlive && lease.keepAlive() };
      },
    },
  });
  const changes: string[] = [];
  const lease = (holder: string, store: Discovery) =>
    new PlannerLease({
      discovery: store,
      clock,
      holder,
      ttlMs: 3000,
      logger: silentLogger,
      onChange: (acting) => {
        changes.push(`${holder} ${acting ? "acts" : "stands by"} at ${clock.now()}`);
      },
    });
  const a = lease("a", aStore);
  const b = lease("b", discovery);
  const c = lease("c", discovery);
  await a.start();
  await b.start();
  assert.deepEqual([a.acting, b.acting, await b.holder()], [true, false, "a"]);
  // a renews every second; b tries as often and gets nothing.
  await clock.advance(10_000);
  assert.deepEqual([a.acting, b.acting], [true, false]);
  // a stops renewing at 10 s (renewed last at 10 s): its claim lapses after 13 s, and b, trying
  // every second, takes it at the first try after that.
  aAlive = false;
  await clock.advance(5000);
  assert.deepEqual([a.acting, b.acting, await b.holder()], [false, true, "b"]);
  assert.deepEqual(changes, ["a acts at 0", "a stands by at 11000", "b acts at 14000"]);
  // b closes: it gives the claim up, and c takes it at its first try.
  await c.start();
  assert.equal(c.acting, false);
  await b.close();
  assert.equal(await c.holder(), undefined);
  await clock.advance(1000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(c.acting, true, `${changes.join(", ")} now ${clock.now()}`);
  await Promise.all([a.close(), c.close()]);
});

// Regression: acting read true from the claim on, while the planner was still adopting its
// predecessor's workers, so its view could show an acting planner with no workers.
test("a planner reads as acting only once its take-over (onChange) has settled", async () => {
  const clock = new VirtualClock();
  const discovery = new MemoryDiscovery({ clock, sweepIntervalMs: 0 });
  let finishTakeOver: () => void = () => {};
  const seen: boolean[] = [];
  const lease: PlannerLease = new PlannerLease({
    discovery,
    clock,
    holder: "a",
    logger: silentLogger,
    onChange: (acting) => {
      seen.push(lease.acting);
      return acting ? new Promise<void>((resolve) => (finishTakeOver = resolve)) : undefined;
    },
  });
  const starting = lease.start();
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual([seen, lease.acting], [[false], false], "claimed, still taking over");
  finishTakeOver();
  await starting;
  assert.equal(lease.acting, true);
  await lease.close();
});
