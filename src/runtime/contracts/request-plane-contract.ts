import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import type { RequestPlane } from "../request-plane.js";
import { waitFor } from "./wait-for.js";

export interface RequestPlaneFixture {
  readonly plane: RequestPlane;
  close(): Promise<void>;
}

/** The behaviour every `RequestPlane` binding must show. */
export function requestPlaneContract(name: string, makeFixture: () => Promise<RequestPlaneFixture>): void {
  const withFixture = async (body: (f: RequestPlaneFixture) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: a call streams every response in order`, () =>
    withFixture(async ({ plane }) => {
      await plane.serve("w1", async function* (payload) {
        const { count } = payload as { count: number };
        for (let i = 0; i < count; i++) yield { i };
      });
      const got: unknown[] = [];
      for await (const item of plane.call("w1", { count: 5 })) got.push(item);
      assert.deepEqual(
        got,
        [0, 1, 2, 3, 4].map((i) => ({ i })),
      );
    }));

  test(`${name}: a call to an address nobody serves fails with WORKER_UNAVAILABLE`, () =>
    withFixture(async ({ plane }) => {
      await assert.rejects(
        async () => {
          for await (const _ of plane.call("nobody", {})) {
            /* drain */
          }
        },
        (e: unknown) => isArmatureError(e) && e.code === "WORKER_UNAVAILABLE",
      );
    }));

  test(`${name}: aborting the caller's signal cancels the handler`, () =>
    withFixture(async ({ plane }) => {
      const handler = await serveUntilAborted(plane);
      const controller = new AbortController();
      let received = 0;
      await assert.rejects(async () => {
        for await (const _ of plane.call("w1", {}, { signal: controller.signal })) {
          if (++received === 3) controller.abort(new Error("client left"));
        }
        throw new Error("stream ended without the abort surfacing");
      });
      await waitFor(() => handler.sawAbort);
    }));

  test(`${name}: a consumer that stops reading cancels the handler`, () =>
    withFixture(async ({ plane }) => {
      const handler = await serveThousand(plane);
      for await (const item of plane.call("w1", {})) if (item === 2) break;
      await waitFor(() => handler.sawAbort);
    }));

  test(`${name}: an error thrown by the handler reaches the caller`, () =>
    withFixture(async ({ plane }) => {
      await plane.serve("w1", async function* () {
        yield 1;
        throw new Error("engine exploded");
      });
      await assert.rejects(async () => {
        for await (const _ of plane.call("w1", {})) {
          /* drain */
        }
      }, /engine exploded/);
    }));

  test(`${name}: open delivers every response in order, then the end`, () =>
    withFixture(async ({ plane }) => {
      await plane.serve("w1", async function* (payload) {
        const { count } = payload as { count: number };
        for (let i = 0; i < count; i++) yield { i };
      });
      const { items, outcome } = await openAndCollect(plane, "w1", { count: 5 });
      assert.deepEqual(
        items,
        [0, 1, 2, 3, 4].map((i) => ({ i })),
      );
      assert.equal(outcome, "ended");
    }));

  test(`${name}: open to an address nobody serves fails the sink with WORKER_UNAVAILABLE`, () =>
    withFixture(async ({ plane }) => {
      const { outcome } = await openAndCollect(plane, "nobody", {});
      assert.ok(outcome !== "ended" && isArmatureError(outcome.error) && outcome.error.code === "WORKER_UNAVAILABLE");
    }));

  test(`${name}: an error thrown by the handler fails the sink after the items before it`, () =>
    withFixture(async ({ plane }) => {
      await plane.serve("w1", async function* () {
        yield 1;
        throw new Error("engine exploded");
      });
      const { items, outcome } = await openAndCollect(plane, "w1", {});
      assert.deepEqual(items, [1]);
      assert.ok(outcome !== "ended" && /engine exploded/.test(String(outcome.error)));
    }));

  test(`${name}: stopping a delivery cancels the handler, and nothing more reaches the sink`, () =>
    withFixture(async ({ plane }) => {
      const handler = await serveThousand(plane);
      const items: unknown[] = [];
      let calls = 0;
      let stopped: Promise<void> | undefined;
      const delivery = plane.open(
        "w1",
        {},
        {
          push: (item) => {
            items.push(item);
            if (item === 2) stopped = delivery.stop();
          },
          end: () => calls++,
          fail: () => calls++,
        },
      );
      await waitFor(() => handler.sawAbort);
      await stopped;
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(items, [0, 1, 2]);
      assert.equal(calls, 0, "neither end nor fail follows a stop");
    }));

  test(`${name}: aborting the caller's signal cancels the handler and fails the sink with its reason`, () =>
    withFixture(async ({ plane }) => {
      const handler = await serveUntilAborted(plane);
      const controller = new AbortController();
      const { items, outcome } = await openAndCollect(plane, "w1", {}, controller, 3);
      assert.equal(items.length, 3);
      assert.ok(outcome !== "ended" && outcome.error instanceof Error && outcome.error.message === "client left");
      await waitFor(() => handler.sawAbort);
    }));

  test(`${name}: while the sink is holding, the handler is not asked for more`, () =>
    withFixture(async ({ plane }) => {
      let produced = 0;
      await plane.serve("w1", async function* () {
        for (let i = 0; i < 100; i++) {
          produced++;
          yield i;
        }
      });
      let release!: () => void;
      const hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      let holding: Promise<void> | undefined;
      const items: unknown[] = [];
      let ended = false;
      plane.open(
        "w1",
        {},
        {
          get holding() {
            return holding;
          },
          push: (item) => {
            items.push(item);
            if (item === 0) holding = hold;
          },
          end: () => {
            ended = true;
          },
          fail: () => undefined,
        },
      );
      await waitFor(() => items.length === 1);
      await new Promise((r) => setTimeout(r, 50));
      // The handler may have run ahead by what one binding buffers (NATS: its credit window).
      const whileHeld = items.length;
      assert.ok(whileHeld < 100, `delivery went on while held: ${whileHeld} items`);
      holding = undefined;
      release();
      await waitFor(() => ended);
      assert.equal(items.length, 100);
      assert.equal(produced, 100);
    }));
}

/** Opens a call and gathers what reaches its sink; with `abortAfter`, aborts `controller` with "client left" after that many items. */
function openAndCollect(
  plane: RequestPlane,
  address: string,
  payload: unknown,
  controller = new AbortController(),
  abortAfter?: number,
): Promise<{ items: unknown[]; outcome: "ended" | { error: unknown } }> {
  return new Promise((resolve) => {
    const items: unknown[] = [];
    plane.open(
      address,
      payload,
      {
        push: (item) => {
          items.push(item);
          if (items.length === abortAfter) controller.abort(new Error("client left"));
        },
        end: () => resolve({ items, outcome: "ended" }),
        fail: (error) => resolve({ items, outcome: { error } }),
      },
      { signal: controller.signal },
    );
  });
}

/** Serves `w1` with a handler that yields until its signal aborts, and says whether it saw the abort. */
function serveUntilAborted(plane: RequestPlane): Promise<{ sawAbort: boolean }> {
  return serveCounting(plane, (signal) => !signal.aborted, 2);
}

/** Serves `w1` with a handler that yields 0..999, 1 ms apart, and says whether it saw its signal abort. */
function serveThousand(plane: RequestPlane): Promise<{ sawAbort: boolean }> {
  return serveCounting(plane, (_signal, i) => i < 1000, 1);
}

async function serveCounting(
  plane: RequestPlane,
  goOn: (signal: AbortSignal, i: number) => boolean,
  gapMs: number,
): Promise<{ sawAbort: boolean }> {
  const seen = { sawAbort: false };
  await plane.serve("w1", async function* (_payload, { signal }) {
    try {
      for (let i = 0; goOn(signal, i); i++) {
        yield i;
        await new Promise((r) => setTimeout(r, gapMs));
      }
    } finally {
      seen.sawAbort = signal.aborted;
    }
  });
  return seen;
}
