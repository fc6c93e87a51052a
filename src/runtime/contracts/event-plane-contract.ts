import assert from "node:assert/strict";
import { test } from "node:test";
import type { EventPlane } from "../event-plane.js";
import { waitFor } from "./wait-for.js";

export interface EventPlaneFixture {
  readonly events: EventPlane;
  close(): Promise<void>;
}

/** The behaviour every `EventPlane` binding must show. */
export function eventPlaneContract(name: string, makeFixture: () => Promise<EventPlaneFixture>): void {
  const withFixture = async (body: (f: EventPlaneFixture) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: subscribers get messages in publish order`, () =>
    withFixture(async ({ events }) => {
      const got: unknown[] = [];
      events.subscribe("kv.w1", (p) => got.push(p));
      for (let i = 0; i < 50; i++) await events.publish("kv.w1", { i });
      await waitFor(() => got.length === 50);
      assert.deepEqual(
        got,
        Array.from({ length: 50 }, (_, i) => ({ i })),
      );
    }));

  test(`${name}: wildcards match like NATS subjects`, () =>
    withFixture(async ({ events }) => {
      const star: string[] = [];
      const tail: string[] = [];
      events.subscribe("kv.*", (_p, s) => star.push(s));
      events.subscribe("kv.>", (_p, s) => tail.push(s));
      await events.publish("kv.w1", 1);
      await events.publish("kv.w1.x", 2);
      await events.publish("load.w1", 3);
      await waitFor(() => tail.length === 2);
      assert.deepEqual(star, ["kv.w1"]);
      assert.deepEqual(tail, ["kv.w1", "kv.w1.x"]);
    }));

  test(`${name}: an unsubscribed handler receives nothing more`, () =>
    withFixture(async ({ events }) => {
      const got: unknown[] = [];
      const stop = events.subscribe("a", (p) => got.push(p));
      await events.publish("a", 1);
      await waitFor(() => got.length === 1);
      stop();
      await events.publish("a", 2);
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(got, [1]);
    }));

  test(`${name}: a subscription made after a subject was published on hears its later messages`, () =>
    withFixture(async ({ events }) => {
      const early: unknown[] = [];
      const late: unknown[] = [];
      events.subscribe("load.>", (p) => early.push(p));
      await events.publish("load.w1", 1);
      await waitFor(() => early.length === 1);
      const stop = events.subscribe("load.*", (p) => late.push(p));
      if ("flush" in events) await (events as { flush(): Promise<void> }).flush();
      await events.publish("load.w1", 2);
      await waitFor(() => early.length === 2 && late.length === 1);
      stop();
      await events.publish("load.w1", 3);
      await waitFor(() => early.length === 3);
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual([early, late], [[1, 2, 3], [2]]);
    }));

  test(`${name}: payloads with bigint hashes arrive intact`, () =>
    withFixture(async ({ events }) => {
      const got: unknown[] = [];
      events.subscribe("kv.w1", (p) => got.push(p));
      const payload = { hashes: [18446744073709551615n, 1n] };
      await events.publish("kv.w1", payload);
      await waitFor(() => got.length === 1);
      assert.deepEqual(got[0], payload);
    }));
}
