import assert from "node:assert/strict";
import { test } from "node:test";
import type { ModelCard } from "../../protocol/index.js";
import type { Discovery, DiscoveryEvent, InstanceRecord } from "../discovery.js";
import { waitFor } from "./wait-for.js";

/** What a binding under test provides: a fresh discovery, and a way to let time pass for it. */
export interface DiscoveryFixture {
  readonly discovery: Discovery;
  /** Lets `ms` of the binding's time pass (virtual or real). */
  passTime(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** A small worker's card, for tests that register instances. */
export const card: ModelCard = {
  name: "m",
  role: "aggregated",
  engine: "mocker",
  blockSize: 16,
  totalKvBlocks: 100,
  maxBatchedTokens: 512,
  maxSequences: 4,
  contextLength: 1024,
  tokenizer: { kind: "bytes" },
  eosTokenIds: [0],
  publishesKvEvents: true,
};

function instance(id: string): InstanceRecord {
  return { id, role: "aggregated", model: "m", card };
}

/** The behaviour every `Discovery` binding must show. Call inside a test file. */
export function discoveryContract(name: string, makeFixture: () => Promise<DiscoveryFixture>): void {
  const withFixture = async (body: (f: DiscoveryFixture) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: registered instances are listed with their card`, () =>
    withFixture(async ({ discovery }) => {
      await discovery.register(instance("a"), { ttlMs: 10_000 });
      await discovery.register(instance("b"), { ttlMs: 10_000 });
      const ids = (await discovery.list()).map((i) => i.id).sort();
      assert.deepEqual(ids, ["a", "b"]);
      assert.deepEqual((await discovery.list()).find((i) => i.id === "a")?.card, card);
    }));

  test(`${name}: revoking a lease removes the instance and tells watchers`, () =>
    withFixture(async ({ discovery }) => {
      const events: DiscoveryEvent[] = [];
      const lease = await discovery.register(instance("a"), { ttlMs: 10_000 });
      const stop = discovery.watch((e) => events.push(e));
      // Watches may start asynchronously (etcd): the current instance is reported first.
      await waitFor(() => events.length > 0);
      await lease.revoke();
      await waitFor(() => events.some((e) => e.type === "instance-removed"));
      assert.deepEqual(
        events.map((e) => e.type),
        ["instance-added", "instance-removed"],
      );
      assert.deepEqual(await discovery.list(), []);
      stop();
    }));

  test(`${name}: a lease without keep-alive expires after its TTL`, () =>
    withFixture(async ({ discovery, passTime }) => {
      const lease = await discovery.register(instance("a"), { ttlMs: 1000 });
      await passTime(400);
      assert.equal(await lease.keepAlive(), true);
      await passTime(800);
      assert.equal((await discovery.list()).length, 1, "kept alive: still listed");
      await passTime(2500);
      assert.deepEqual(await discovery.list(), []);
      assert.equal(await lease.keepAlive(), false);
    }));

  test(`${name}: a watcher sees instances added after it started`, () =>
    withFixture(async ({ discovery }) => {
      const seen: string[] = [];
      const stop = discovery.watch((e) => {
        if (e.type === "instance-added") seen.push(e.instance.id);
      });
      await discovery.register(instance("late"), { ttlMs: 10_000 });
      await waitFor(() => seen.includes("late"));
      stop();
    }));

  test(`${name}: a claim is held by one holder at a time, and free again once revoked or lapsed`, () =>
    withFixture(async ({ discovery, passTime }) => {
      const first = await discovery.claim("planner", "p1", { ttlMs: 1000 });
      assert.ok(first, "a free name is claimed");
      assert.equal(await discovery.claim("planner", "p2", { ttlMs: 1000 }), undefined, "held: refused");
      assert.equal(await discovery.holder("planner"), "p1");
      assert.ok(await discovery.claim("other", "p2", { ttlMs: 1000 }), "another name is its own");
      await first.revoke();
      const second = await discovery.claim("planner", "p2", { ttlMs: 1000 });
      assert.ok(second, "revoked: the next caller takes it");
      assert.equal(await discovery.holder("planner"), "p2");
      await passTime(400);
      assert.equal(await second.keepAlive(), true);
      assert.equal(await discovery.claim("planner", "p3", { ttlMs: 1000 }), undefined);
      // Not kept alive: it lapses, and p3 takes it; p2's keep-alive then says it is lost.
      await passTime(2500);
      assert.equal(await discovery.holder("planner"), undefined);
      assert.ok(await discovery.claim("planner", "p3", { ttlMs: 1000 }));
      assert.equal(await second.keepAlive(), false);
      assert.equal(await discovery.holder("planner"), "p3");
    }));
}
