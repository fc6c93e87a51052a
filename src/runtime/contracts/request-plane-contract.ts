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
      let handlerSawAbort = false;
      await plane.serve("w1", async function* (_payload, { signal }) {
        try {
          for (let i = 0; !signal.aborted; i++) {
            yield i;
            await new Promise((r) => setTimeout(r, 2));
          }
        } finally {
          handlerSawAbort = signal.aborted;
        }
      });
      const controller = new AbortController();
      let received = 0;
      await assert.rejects(async () => {
        for await (const _ of plane.call("w1", {}, { signal: controller.signal })) {
          if (++received === 3) controller.abort(new Error("client left"));
        }
        throw new Error("stream ended without the abort surfacing");
      });
      await waitFor(() => handlerSawAbort);
    }));

  test(`${name}: a consumer that stops reading cancels the handler`, () =>
    withFixture(async ({ plane }) => {
      let handlerSawAbort = false;
      await plane.serve("w1", async function* (_payload, { signal }) {
        try {
          for (let i = 0; i < 1000; i++) {
            yield i;
            await new Promise((r) => setTimeout(r, 1));
          }
        } finally {
          handlerSawAbort = signal.aborted;
        }
      });
      for await (const item of plane.call("w1", {})) if (item === 2) break;
      await waitFor(() => handlerSawAbort);
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
}
