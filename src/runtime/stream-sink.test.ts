import assert from "node:assert/strict";
import { test } from "node:test";
import { AttachableSink, type Delivery, deliver, iterate, type StreamSink } from "./stream-sink.js";

/** A sink that records every call, in order. */
function recorder<T>(): StreamSink<T> & { calls: string[]; settled: Promise<void> } {
  const calls: string[] = [];
  let settle!: () => void;
  const settled = new Promise<void>((resolve) => {
    settle = resolve;
  });
  return {
    calls,
    settled,
    push: (item) => calls.push(`item ${String(item)}`),
    end: () => {
      calls.push("end");
      settle();
    },
    fail: (error) => {
      calls.push(`fail ${(error as Error).message}`);
      settle();
    },
  };
}

/** An iterator over 0..count-1 that counts the items it was asked for and whether it was returned. */
function counted(count: number, failAt?: number) {
  const seen = { pulled: 0, returned: false };
  const iterable: AsyncIterable<number> = {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        if (seen.returned || seen.pulled >= count) return { done: true, value: undefined };
        const value = seen.pulled++;
        if (value === failAt) throw new Error(`broke at ${value}`);
        return { done: false, value };
      },
      return: async () => {
        seen.returned = true;
        return { done: true, value: undefined };
      },
    }),
  };
  return { iterable, seen };
}

test("deliver pushes every item in order, then end; nothing before it returns", async () => {
  const sink = recorder<number>();
  const { iterable } = counted(3);
  deliver(iterable, sink);
  assert.deepEqual(sink.calls, [], "the first item needs an await");
  await sink.settled;
  assert.deepEqual(sink.calls, ["item 0", "item 1", "item 2", "end"]);
});

test("deliver fails the sink with the iterator's error, after the items before it", async () => {
  const sink = recorder<number>();
  deliver(counted(5, 2).iterable, sink);
  await sink.settled;
  assert.deepEqual(sink.calls, ["item 0", "item 1", "fail broke at 2"]);
});

test("a push that throws stops the producer (returned), then fails the sink with that error", async () => {
  const sink = recorder<number>();
  const { iterable, seen } = counted(10);
  deliver(iterable, {
    ...sink,
    push: (item) => {
      if (item === 1) throw new Error("refused 1");
      sink.push(item);
    },
  });
  await sink.settled;
  assert.deepEqual(sink.calls, ["item 0", "fail refused 1"]);
  assert.equal(seen.returned, true);
});

test("stop() returns the producer and no sink call follows, not even end", async () => {
  const sink = recorder<number>();
  const { iterable, seen } = counted(1000);
  let delivery: Delivery | undefined;
  let stopped: Promise<void> | undefined;
  delivery = deliver(iterable, {
    ...sink,
    push: (item) => {
      sink.push(item);
      if (item === 2) stopped = delivery?.stop();
    },
  });
  await new Promise((r) => setTimeout(r, 20));
  await stopped;
  assert.deepEqual(sink.calls, ["item 0", "item 1", "item 2"]);
  assert.equal(seen.returned, true);
  assert.ok(seen.pulled <= 4, `pulled ${seen.pulled} items after the stop`);
  delivery = undefined;
});

test("while the sink is holding, the producer is not asked for its next item", async () => {
  const { iterable, seen } = counted(5);
  let release!: () => void;
  let holding: Promise<void> | undefined;
  const sink = recorder<number>();
  deliver(iterable, {
    ...sink,
    get holding() {
      return holding;
    },
    push: (item) => {
      sink.push(item);
      if (item === 1)
        holding = new Promise<void>((resolve) => {
          release = resolve;
        });
    },
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(seen.pulled, 2, "held after the second item");
  holding = undefined;
  release();
  await sink.settled;
  assert.deepEqual(sink.calls, ["item 0", "item 1", "item 2", "item 3", "item 4", "end"]);
});

test("iterate opens the delivery on the first next(), yields its items and rethrows its failure", async () => {
  let opened = 0;
  const stream = iterate<number>((sink) => {
    opened++;
    return deliver(counted(3, 2).iterable, sink);
  });
  const iterator = stream[Symbol.asyncIterator]();
  assert.equal(opened, 0);
  assert.deepEqual(await iterator.next(), { done: false, value: 0 });
  assert.equal(opened, 1);
  assert.deepEqual(await iterator.next(), { done: false, value: 1 });
  await assert.rejects(iterator.next(), /broke at 2/);
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
});

test("iterate: leaving early stops the delivery; an unread consumer holds the producer after 16 items", async () => {
  const { iterable, seen } = counted(1000);
  const iterator = iterate<number>((sink) => deliver(iterable, sink))[Symbol.asyncIterator]();
  assert.deepEqual(await iterator.next(), { done: false, value: 0 });
  await new Promise((r) => setTimeout(r, 20));
  // One item taken, sixteen queued unread, and the seventeenth pulled before the hold was seen.
  assert.ok(seen.pulled >= 17 && seen.pulled <= 18, `pulled ${seen.pulled}`);
  await iterator.return?.();
  assert.equal(seen.returned, true);
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
});

test("AttachableSink: buffers until attached, then hands on what came in order and passes the rest through", async () => {
  const attachable = new AttachableSink<number>();
  let firstSettled = false;
  void attachable.first.then(() => {
    firstSettled = true;
  });
  await Promise.resolve();
  assert.equal(firstSettled, false);
  attachable.push(1);
  attachable.push(2);
  await attachable.first;
  const sink = recorder<number>();
  attachable.attach(sink);
  assert.deepEqual(sink.calls, ["item 1", "item 2"]);
  attachable.push(3);
  attachable.end();
  assert.deepEqual(sink.calls, ["item 1", "item 2", "item 3", "end"]);
});

test("AttachableSink: a failure before any item rejects first; after attaching, the failure reaches the sink", async () => {
  const attachable = new AttachableSink<number>();
  attachable.fail(new Error("no worker"));
  await assert.rejects(attachable.first, /no worker/);
  const sink = recorder<number>();
  attachable.attach(sink);
  assert.deepEqual(sink.calls, ["fail no worker"]);
});

test("AttachableSink: asks the producer to hold once 16 items wait unattached, and lets go on attach", async () => {
  const attachable = new AttachableSink<number>();
  for (let i = 0; i < 15; i++) attachable.push(i);
  assert.equal(attachable.holding, undefined);
  attachable.push(15);
  const hold = attachable.holding;
  assert.notEqual(hold, undefined);
  attachable.attach(recorder<number>());
  await hold; // settles: a test that hangs here fails by the runner's timeout
  assert.equal(attachable.holding, undefined);
});
