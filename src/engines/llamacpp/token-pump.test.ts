import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TokenPump } from "./token-pump.js";

/**
 * A source of 0, 1, 2, … that answers each `next()` on a later turn and records the calls. Like
 * node-llama-cpp's generator, it starts the work of a `next()` (`calls.dispatched`) only some
 * microtasks after the call.
 */
function countingSource(total = Number.POSITIVE_INFINITY, failAt?: number) {
  const calls = { next: 0, dispatched: 0, returned: false };
  let produced = 0;
  const source: AsyncIterator<number> = {
    next: async () => {
      calls.next++;
      for (let hop = 0; hop < 10; hop++) await null;
      calls.dispatched++;
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          if (produced === failAt) reject(new Error("decode failed"));
          else if (produced >= total) resolve({ done: true, value: undefined });
          else resolve({ done: false, value: produced++ });
        }, 1),
      );
    },
    return: async () => {
      calls.returned = true;
      return { done: true, value: undefined };
    },
  };
  return { source, calls };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("TokenPump", () => {
  it("asks for the next token before the consumer gets this one", async () => {
    const { source, calls } = countingSource();
    const pump = new TokenPump(source, { capacity: 4, limit: 5, onToken: () => {} });
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) {
      const token = await pump.next();
      // Token i is handed over only once the work of token i + 1 has started (the next decode runs
      // while the consumer works on this one).
      assert.ok(calls.dispatched >= i + 2, `token ${i} was handed over after ${calls.dispatched} started`);
      seen.push(token as number);
    }
    assert.deepEqual(seen, [0, 1, 2, 3]);
    assert.equal(await pump.next(), 4);
    assert.equal(await pump.next(), undefined);
    await pump.stop();
    assert.equal(calls.next, 5, "no token is asked for beyond the limit");
    assert.ok(calls.returned, "the source is closed");
  });

  it("buffers at most `capacity` tokens and one in flight for a consumer that does not read", async () => {
    const { source, calls } = countingSource();
    const pump = new TokenPump(source, { capacity: 3, limit: 100, onToken: () => {} });
    await new Promise((resolve) => setTimeout(resolve, 40));
    assert.equal(calls.next, 3, "3 tokens buffered, none asked for while the buffer is full");
    assert.equal(await pump.next(), 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls.next, 4, "taking one token lets one more be asked for");
    await pump.stop();
    assert.ok(calls.returned);
  });

  it("hands each token to onToken as it arrives, in order, and ends with the source", async () => {
    const { source } = countingSource(3);
    const arrived: number[] = [];
    const pump = new TokenPump(source, { capacity: 4, limit: 10, onToken: (t) => arrived.push(t) });
    const read: (number | undefined)[] = [];
    for (let t = await pump.next(); t !== undefined; t = await pump.next()) read.push(t);
    assert.deepEqual(arrived, [0, 1, 2]);
    assert.deepEqual(read, [0, 1, 2]);
    await pump.stop();
  });

  it("stop() while a token is in flight waits for it and closes the source", async () => {
    const { source, calls } = countingSource();
    const pump = new TokenPump(source, { capacity: 4, limit: 100, onToken: () => {} });
    assert.equal(await pump.next(), 0);
    await pump.stop();
    assert.ok(calls.returned, "the source was closed before stop() resolved");
    const asked = calls.next;
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(calls.next, asked, "nothing is asked for after stop()");
  });

  it("a source's error reaches the consumer after the tokens before it", async () => {
    const { source, calls } = countingSource(Number.POSITIVE_INFINITY, 2);
    const pump = new TokenPump(source, { capacity: 4, limit: 10, onToken: () => {} });
    assert.equal(await pump.next(), 0);
    assert.equal(await pump.next(), 1);
    await assert.rejects(pump.next(), /decode failed/);
    await pump.stop();
    assert.ok(calls.returned);
  });

  it("a waiting consumer is woken once for tokens that arrive in one turn", async () => {
    let resolveAll: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      resolveAll = resolve;
    });
    let n = 0;
    const source: AsyncIterator<number> = {
      next: async () => {
        await gate;
        return { done: false, value: n++ };
      },
    };
    const pump = new TokenPump(source, { capacity: 4, limit: 3, onToken: () => {} });
    const first = pump.next();
    await turn();
    resolveAll?.();
    assert.equal(await first, 0);
    assert.equal(await pump.next(), 1);
    assert.equal(await pump.next(), 2);
    assert.equal(await pump.next(), undefined);
    await pump.stop();
  });
});
