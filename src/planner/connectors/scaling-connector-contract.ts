import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError, type WorkerRole } from "../../protocol/index.js";
import type { ReplicaCount, ScalingConnector } from "./scaling-connector.js";

/** What a binding under test provides: a fresh connector with empty pools, and its time. */
export interface ScalingConnectorFixture {
  readonly connector: ScalingConnector;
  /** The roles it was set up with; at least one. */
  readonly roles: readonly WorkerRole[];
  /** A role it was not set up with, when there is one. */
  readonly missingRole?: WorkerRole;
  /** How long a worker takes to start or drain in this binding's time, at most. */
  readonly settleMs: number;
  /** Lets `ms` of the binding's time pass (virtual or real). */
  passTime(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** The behaviour every `ScalingConnector` binding must show. Call inside a test file. */
export function scalingConnectorContract(name: string, makeFixture: () => Promise<ScalingConnectorFixture>): void {
  const withFixture = async (body: (f: ScalingConnectorFixture, role: WorkerRole) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture, fixture.roles[0] as WorkerRole);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: scaling up sets desired at once, and ready follows as the workers start`, () =>
    withFixture(async (f, role) => {
      assert.deepEqual(await f.connector.replicas(role), { desired: 0, ready: 0 });
      await f.connector.scale(role, 2);
      assert.equal((await f.connector.replicas(role)).desired, 2);
      await settle(f, role, { desired: 2, ready: 2 });
    }));

  test(`${name}: scaling down sets desired at once, and the removed workers stop counting as ready`, () =>
    withFixture(async (f, role) => {
      await f.connector.scale(role, 3);
      await settle(f, role, { desired: 3, ready: 3 });
      await f.connector.scale(role, 1);
      assert.equal((await f.connector.replicas(role)).desired, 1);
      await settle(f, role, { desired: 1, ready: 1 });
      await f.connector.scale(role, 0);
      await settle(f, role, { desired: 0, ready: 0 });
    }));

  test(`${name}: scaling to the current count changes nothing`, () =>
    withFixture(async (f, role) => {
      await f.connector.scale(role, 1);
      await settle(f, role, { desired: 1, ready: 1 });
      await f.connector.scale(role, 1);
      await f.passTime(f.settleMs);
      assert.deepEqual(await f.connector.replicas(role), { desired: 1, ready: 1 });
    }));

  test(`${name}: each role is its own pool`, async (t) => {
    const probe = await makeFixture();
    const enough = probe.roles.length >= 2;
    await probe.close();
    if (!enough) return t.skip("the fixture has one role");
    await withFixture(async (f) => {
      const [first, second] = f.roles as [WorkerRole, WorkerRole];
      await f.connector.scale(first, 2);
      await f.connector.scale(second, 1);
      await settle(f, first, { desired: 2, ready: 2 });
      await settle(f, second, { desired: 1, ready: 1 });
      await f.connector.scale(first, 0);
      await settle(f, first, { desired: 0, ready: 0 });
      assert.deepEqual(await f.connector.replicas(second), { desired: 1, ready: 1 });
    });
  });

  test(`${name}: a count that is not a whole number of 0 or more is refused and changes nothing`, () =>
    withFixture(async (f, role) => {
      await f.connector.scale(role, 1);
      for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        await assert.rejects(f.connector.scale(role, bad), isCode("CONFIG_INVALID"), `count ${bad}`);
      }
      assert.equal((await f.connector.replicas(role)).desired, 1);
    }));

  test(`${name}: a role the connector was not set up with is refused, naming the option`, async (t) => {
    await withFixture(async (f) => {
      if (!f.missingRole) return t.skip("the fixture has every role");
      await assert.rejects(f.connector.replicas(f.missingRole), isCode("CONFIG_INVALID"));
      await assert.rejects(f.connector.scale(f.missingRole, 1), isCode("CONFIG_INVALID"));
    });
  });

  test(`${name}: after close, scaling is refused; close twice is fine`, () =>
    withFixture(async (f, role) => {
      await f.connector.close();
      await f.connector.close();
      await assert.rejects(f.connector.scale(role, 1), isCode("WORKER_UNAVAILABLE"));
    }));
}

/** Lets the binding's time pass until the pool reads `want`; fails after twice its settle time. */
async function settle(f: ScalingConnectorFixture, role: WorkerRole, want: ReplicaCount): Promise<void> {
  const step = Math.max(1, f.settleMs / 20);
  let seen = await f.connector.replicas(role);
  for (let waited = 0; waited <= 2 * f.settleMs; waited += step) {
    if (seen.desired === want.desired && seen.ready === want.ready) return;
    await f.passTime(step);
    seen = await f.connector.replicas(role);
  }
  assert.deepEqual(seen, want, `the ${role} pool did not settle`);
}

function isCode(code: string): (error: unknown) => boolean {
  return (error) => isArmatureError(error) && error.code === code;
}
