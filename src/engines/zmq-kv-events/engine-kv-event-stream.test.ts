import assert from "node:assert/strict";
import { test } from "node:test";
import { encode } from "@msgpack/msgpack";
import { Publisher, Router } from "zeromq";
import type { KvEvent } from "../../protocol/index.js";
import { EngineKvEventStream } from "./engine-kv-event-stream.js";

// The subscriber's sequencing over real ZMQ sockets: a vLLM-shaped PUB (`[topic, seq u64 BE,
// batch]`) and ROUTER replay socket on loopback ports.

const seqFrame = (seq: number | bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(seq));
  return b;
};
const batch = (hash: number) => Buffer.from(encode([0, [["BlockStored", [hash], null, [1, 2, 3, 4], 4, null, "GPU"]], 0]));
const hashesOf = (events: KvEvent[]) =>
  events.map((e) =>
    e.type === "kv-block-stored" ? Number(e.blocks[0]?.blockHash) : e.type === "kv-cache-cleared" ? "cleared" : "removed",
  );

function collector(replayEndpoint?: string) {
  const seen: (number | string)[] = [];
  const dropped: string[] = [];
  const fatal: string[] = [];
  const stream = new EngineKvEventStream({
    endpoint: "tcp://127.0.0.1:1",
    replayEndpoint,
    blockSize: 4,
    onEvents: (events) => seen.push(...hashesOf(events)),
    onDropped: (reason) => dropped.push(reason),
    onFatal: (message) => fatal.push(message),
  });
  return { stream, seen, dropped, fatal };
}

test("frames other than three, a bad sequence number and a malformed batch are dropped and counted; order kept", async () => {
  const { stream, seen, dropped } = collector();
  await stream.handle([Buffer.from("t"), seqFrame(0)]);
  await stream.handle([Buffer.from("t"), Buffer.from([1, 2]), batch(1)]);
  await stream.handle([Buffer.from("t"), seqFrame(0), batch(10)]);
  await stream.handle([Buffer.from("t"), seqFrame(1), Buffer.from("garbage")]);
  await stream.handle([Buffer.from("t"), seqFrame(2), batch(12)]);
  await stream.handle([Buffer.from("t"), seqFrame(2), batch(12)]);
  assert.deepEqual(seen, [10, 12]);
  assert.equal(dropped.length, 4, dropped.join("\n"));
  assert.match(dropped[0] as string, /a message of 2 frames, not 3/);
  assert.match(dropped[1] as string, /not 8 bytes/);
  assert.match(dropped[2] as string, /batch 1: not msgpack/);
  assert.match(dropped[3] as string, /batch 2 again/);
});

test("a sequence that starts again at 0 is a restarted engine: its cache is cleared first", async () => {
  const { stream, seen } = collector();
  await stream.handle([Buffer.from("t"), seqFrame(0), batch(1)]);
  await stream.handle([Buffer.from("t"), seqFrame(1), batch(2)]);
  await stream.handle([Buffer.from("t"), seqFrame(0), batch(3)]);
  assert.deepEqual(seen, [1, 2, "cleared", 3]);
});

test("blocks of another size stop the stream with one loud error, not a silent zero hit rate", async () => {
  const { stream, seen, fatal } = collector();
  const eight = Buffer.from(encode([0, [["BlockStored", [1], null, [1, 2, 3, 4, 5, 6, 7, 8], 8]]]));
  await stream.handle([Buffer.from("t"), seqFrame(0), eight]);
  await stream.handle([Buffer.from("t"), seqFrame(1), batch(2)]);
  assert.deepEqual(seen, []);
  assert.equal(fatal.length, 1);
  assert.match(fatal[0] as string, /--block-size 8/);
});

test("a gap is filled from the ROUTER replay socket; without one it is counted", async () => {
  const router = new Router({ linger: 0 });
  await router.bind("tcp://127.0.0.1:0");
  const buffered = [0, 1, 2, 3].map((seq) => ({ seq, payload: batch(100 + seq) }));
  const asked: bigint[] = [];
  void (async () => {
    for await (const [identity, , start] of router) {
      const from = Buffer.from(start as Uint8Array).readBigUInt64BE();
      asked.push(from);
      for (const b of buffered)
        if (BigInt(b.seq) >= from) await router.send([identity as Buffer, Buffer.alloc(0), seqFrame(b.seq), b.payload]);
      await router.send([identity as Buffer, Buffer.alloc(0), seqFrame(-1), Buffer.alloc(0)]);
    }
  })().catch(() => undefined);
  try {
    const { stream, seen, dropped } = collector(router.lastEndpoint as string);
    // Subscribed late: the first batch seen is 2, so 0 and 1 come from the replay.
    await stream.handle([Buffer.from("t"), seqFrame(2), batch(102)]);
    await stream.handle([Buffer.from("t"), seqFrame(3), batch(103)]);
    assert.deepEqual(seen, [100, 101, 102, 103]);
    assert.deepEqual(asked, [0n]);
    assert.deepEqual(dropped, []);
    const without = collector();
    await without.stream.handle([Buffer.from("t"), seqFrame(0), batch(1)]);
    await without.stream.handle([Buffer.from("t"), seqFrame(3), batch(4)]);
    assert.deepEqual(without.seen, [1, 4]);
    assert.match(without.dropped[0] as string, /batches 1\.\.2 missed \(no replay endpoint\)/);
  } finally {
    router.close();
  }
});

test("subscribed to a live publisher, batches arrive as events", async () => {
  const publisher = new Publisher({ linger: 0 });
  await publisher.bind("tcp://127.0.0.1:0");
  const seen: (number | string)[] = [];
  const stream = new EngineKvEventStream({
    endpoint: publisher.lastEndpoint as string,
    blockSize: 4,
    onEvents: (events) => seen.push(...hashesOf(events)),
    onDropped: () => {},
    onFatal: () => {},
  });
  stream.start();
  try {
    // A PUB drops messages until the subscription reaches it: publish until the first arrives.
    let seq = 0;
    const deadline = Date.now() + 5000;
    while (seen.length === 0 && Date.now() < deadline) {
      await publisher.send([Buffer.from("kv-events"), seqFrame(seq), batch(seq)]);
      seq++;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(seen.length > 0, "no batch arrived");
  } finally {
    await stream.close();
    publisher.close();
  }
});
