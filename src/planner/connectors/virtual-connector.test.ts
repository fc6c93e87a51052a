import assert from "node:assert/strict";
import { test } from "node:test";
import type { WorkerRole } from "../../protocol/index.js";
import { VirtualClock } from "../../runtime/index.js";
import { scalingConnectorContract } from "./scaling-connector-contract.js";
import { type SimulatedWorkers, VirtualConnector } from "./virtual-connector.js";

/** A simulation whose workers each hold a number of in-flight requests the test ends by hand. */
class FakeSimulation implements SimulatedWorkers {
  readonly live = new Set<string>();
  readonly log: string[] = [];
  readonly #idle = new Map<string, () => void>();
  readonly #inflight = new Map<string, number>();
  readonly #clock: VirtualClock;
  #next = 0;

  constructor(clock: VirtualClock) {
    this.#clock = clock;
  }

  addWorker(role: WorkerRole): string {
    const id = `${role}-${++this.#next}`;
    this.live.add(id);
    this.log.push(`add ${id} at ${this.#clock.now()}`);
    return id;
  }

  drainWorker(_role: WorkerRole, id: string): Promise<void> {
    this.log.push(`drain ${id} at ${this.#clock.now()}`);
    if ((this.#inflight.get(id) ?? 0) === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.set(id, resolve));
  }

  removeWorker(_role: WorkerRole, id: string): void {
    this.log.push(`remove ${id} at ${this.#clock.now()}`);
    this.live.delete(id);
  }

  begin(id: string): void {
    this.#inflight.set(id, (this.#inflight.get(id) ?? 0) + 1);
  }

  finish(id: string): void {
    const left = (this.#inflight.get(id) ?? 0) - 1;
    this.#inflight.set(id, left);
    if (left === 0) this.#idle.get(id)?.();
  }
}

scalingConnectorContract("virtual", async () => {
  const clock = new VirtualClock();
  const connector = await VirtualConnector.create({ clock, workers: new FakeSimulation(clock), roles: ["prefill", "decode"] });
  return {
    connector,
    roles: ["prefill", "decode"],
    missingRole: "aggregated",
    settleMs: 30_000,
    passTime: (ms) => clock.advance(ms),
    close: () => connector.close(),
  };
});

async function setup(options: { startupDelayMs?: number } = {}) {
  const clock = new VirtualClock();
  const sim = new FakeSimulation(clock);
  const connector = await VirtualConnector.create({ clock, workers: sim, roles: ["decode"], ...options });
  return { clock, sim, connector };
}

test("a new worker appears after the start-up delay of virtual time (default 30 s), not before", async () => {
  const { clock, sim, connector } = await setup();
  await connector.scale("decode", 2);
  await clock.advance(29_999);
  assert.deepEqual(await connector.replicas("decode"), { desired: 2, ready: 0 });
  assert.equal(sim.live.size, 0);
  await clock.advance(1);
  assert.deepEqual(await connector.replicas("decode"), { desired: 2, ready: 2 });
  assert.deepEqual(sim.log, ["add decode-1 at 30000", "add decode-2 at 30000"]);
});

test("the start-up delay is an option", async () => {
  const { clock, connector } = await setup({ startupDelayMs: 5_000 });
  await connector.scale("decode", 1);
  await clock.advance(5_000);
  assert.deepEqual(await connector.replicas("decode"), { desired: 1, ready: 1 });
});

test("scale-down removes a worker only after its in-flight requests finish, and it stops counting as ready at once", async () => {
  const { clock, sim, connector } = await setup({ startupDelayMs: 1_000 });
  await connector.scale("decode", 2);
  await clock.advance(1_000);
  sim.begin("decode-2");
  sim.begin("decode-2");
  await connector.scale("decode", 1);
  assert.deepEqual(await connector.replicas("decode"), { desired: 1, ready: 1 });
  assert.deepEqual(connector.view("decode"), { starting: 0, ready: ["decode-1"], draining: ["decode-2"] });
  await clock.advance(60_000);
  assert.ok(sim.live.has("decode-2"), "still serving its requests");
  sim.finish("decode-2");
  await clock.advance(1);
  assert.ok(sim.live.has("decode-2"), "one request left");
  sim.finish("decode-2");
  await clock.advance(1);
  assert.ok(!sim.live.has("decode-2"));
  assert.deepEqual(sim.log.slice(-2), ["drain decode-2 at 1000", "remove decode-2 at 61001"]);
  assert.deepEqual(connector.view("decode"), { starting: 0, ready: ["decode-1"], draining: [] });
});

test("scale-down cancels workers still starting before it drains ready ones, newest first", async () => {
  const { clock, sim, connector } = await setup({ startupDelayMs: 10_000 });
  await connector.scale("decode", 2);
  await clock.advance(10_000);
  await connector.scale("decode", 4);
  await clock.advance(5_000);
  await connector.scale("decode", 1);
  assert.deepEqual(connector.view("decode"), { starting: 0, ready: ["decode-1"], draining: ["decode-2"] });
  await clock.advance(20_000);
  assert.deepEqual([...sim.live], ["decode-1"]);
  assert.equal(sim.log.filter((l) => l.startsWith("add")).length, 2, "the cancelled starts never joined");
});

test("a worker being added when scale-down chose it drains as soon as it exists", async () => {
  const clock = new VirtualClock();
  const sim = new FakeSimulation(clock);
  let release!: () => void;
  const slowAdd: SimulatedWorkers = {
    addWorker: async (role) => {
      await new Promise<void>((r) => {
        release = r;
      });
      return sim.addWorker(role);
    },
    drainWorker: (role, id) => sim.drainWorker(role, id),
    removeWorker: (role, id) => sim.removeWorker(role, id),
  };
  const connector = await VirtualConnector.create({ clock, workers: slowAdd, roles: ["decode"], startupDelayMs: 100 });
  await connector.scale("decode", 1);
  await clock.advance(100);
  await connector.scale("decode", 0);
  assert.deepEqual(await connector.replicas("decode"), { desired: 0, ready: 0 });
  release();
  await connector.close();
  assert.deepEqual(sim.log, ["add decode-1 at 100", "drain decode-1 at 100", "remove decode-1 at 100"]);
});

test("initial workers count as ready; a failing add is reported and not counted", async () => {
  const clock = new VirtualClock();
  const errors: unknown[] = [];
  const connector = await VirtualConnector.create({
    clock,
    roles: ["prefill"],
    startupDelayMs: 10,
    initialWorkers: { prefill: ["p-0"] },
    onError: (error) => errors.push(error),
    workers: {
      addWorker: () => {
        throw new Error("no capacity in the simulation");
      },
      drainWorker: async () => {},
      removeWorker: () => {},
    },
  });
  assert.deepEqual(await connector.replicas("prefill"), { desired: 1, ready: 1 });
  await connector.scale("prefill", 2);
  await clock.advance(10);
  assert.deepEqual(await connector.replicas("prefill"), { desired: 1, ready: 1 });
  assert.equal(errors.length, 1);
});

test("close cancels starts still waiting and waits for drains under way", async () => {
  const { clock, sim, connector } = await setup({ startupDelayMs: 1_000 });
  await connector.scale("decode", 1);
  await clock.advance(1_000);
  sim.begin("decode-1");
  await connector.scale("decode", 0);
  await connector.scale("decode", 3);
  let closed = false;
  const closing = connector.close().then(() => {
    closed = true;
  });
  await clock.advance(5_000);
  assert.equal(closed, false, "decode-1 still has a request");
  sim.finish("decode-1");
  await closing;
  assert.deepEqual(sim.log, ["add decode-1 at 1000", "drain decode-1 at 1000", "remove decode-1 at 6000"]);
});
