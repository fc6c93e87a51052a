import assert from "node:assert/strict";
import { test } from "node:test";
import { StreamingChecksum } from "../checksum.js";
import { type FrameHeader, FrameReader } from "./tcp-frames.js";

/** One frame as the wire carries it, with a correct trailer unless `trailer` says otherwise. */
function frame(header: object, payload?: Buffer, trailer?: bigint): Buffer {
  const json = Buffer.from(JSON.stringify(payload ? { ...header, length: payload.length } : header));
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(json.length, 0);
  if (!payload) return Buffer.concat([prefix, json]);
  const hash = new StreamingChecksum();
  hash.update(payload);
  const tail = Buffer.alloc(8);
  tail.writeBigUInt64LE(trailer ?? hash.digest(), 0);
  return Buffer.concat([prefix, json, payload, tail]);
}

function rawFrame(json: string): Buffer {
  const body = Buffer.from(json);
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(body.length, 0);
  return Buffer.concat([prefix, body]);
}

function reader(landing: (header: FrameHeader) => Buffer | undefined = (h) => Buffer.alloc(h.length ?? 0)) {
  const frames: { header: FrameHeader; payload: Buffer | undefined; intact: boolean }[] = [];
  const parser = new FrameReader(landing, (header, payload, intact) => frames.push({ header, payload, intact }));
  return { parser, frames };
}

const malformed = { code: "TRANSFER_FAILED", message: /malformed transfer frame/ };

// Regression: a peer-supplied header length of 4 GiB made the reader wait to buffer all of it.
test("a header length over the bound is refused at once", () => {
  const { parser } = reader();
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(0xffff_ffff, 0);
  assert.throws(() => parser.push(prefix), malformed);
});

// Regression: headers were JSON.parse'd and used without checking their shape.
test("headers that are not JSON, not an object, or carry a bad op, id or length are refused", () => {
  const bad = [
    "{not json",
    "[1,2]",
    "null",
    JSON.stringify({ op: "explode", id: 1 }),
    JSON.stringify({ op: "ack", id: -1 }),
    JSON.stringify({ op: "ack", id: 1.5 }),
    JSON.stringify({ op: "ack", id: "1" }),
    JSON.stringify({ op: "ack", id: 2 ** 60 }),
    JSON.stringify({ op: "data", id: 1, length: -5 }),
    JSON.stringify({ op: "data", id: 1, length: 1.5 }),
    JSON.stringify({ op: "data", id: 1, length: 2 ** 60 }),
    JSON.stringify({ op: "read", id: 1, region: "r", offset: 0, readLength: -1 }),
    JSON.stringify({ op: "read", id: 1, region: 7, offset: 0, readLength: 1 }),
    JSON.stringify({ op: "write", id: 1, region: "r", offset: "0", length: 1 }),
    JSON.stringify({ op: "notify", id: 1, from: {}, message: "m" }),
    JSON.stringify({ op: "ack", id: 1, length: 10 }),
  ];
  for (const json of bad) {
    const { parser, frames } = reader();
    assert.throws(() => parser.push(rawFrame(json)), malformed, json);
    assert.equal(frames.length, 0, json);
  }
});

test("well-formed frames pass, split across chunks at every byte", () => {
  const payload = Buffer.from("some KV bytes");
  const wire = Buffer.concat([
    frame({ op: "write", id: 1, region: "r", offset: 0 }, payload),
    frame({ op: "ack", id: 2 }),
    frame({ op: "notify", id: 3, from: "a", message: "kv-done:x" }),
  ]);
  const { parser, frames } = reader();
  for (let i = 0; i < wire.length; i++) parser.push(wire.subarray(i, i + 1));
  assert.deepEqual(
    frames.map((f) => [f.header.op, f.header.id, f.payload?.toString(), f.intact]),
    [
      ["write", 1, "some KV bytes", true],
      ["ack", 2, undefined, true],
      ["notify", 3, undefined, true],
    ],
  );
});

// Regression: a landing buffer shorter than the declared length desynchronised the stream.
test("a payload longer than the buffer it lands in is refused", () => {
  const { parser } = reader(() => Buffer.alloc(4));
  assert.throws(() => parser.push(frame({ op: "data", id: 1 }, Buffer.alloc(100))), malformed);
});

test("a payload with nowhere to land is read and dropped, and the next frame still parses", () => {
  const { parser, frames } = reader(() => undefined);
  parser.push(
    Buffer.concat([
      frame({ op: "write", id: 1, region: "gone", offset: 0 }, Buffer.alloc(70_000, 7)),
      frame({ op: "ack", id: 2 }),
    ]),
  );
  assert.deepEqual(
    frames.map((f) => [f.header.op, f.payload, f.intact]),
    [
      ["write", undefined, false],
      ["ack", undefined, true],
    ],
  );
});

test("a payload over the reader's maximum is refused before anything lands", () => {
  let asked = 0;
  const parser = new FrameReader(
    (h) => {
      asked++;
      return Buffer.alloc(h.length ?? 0);
    },
    () => undefined,
    { maxPayloadBytes: 1000 },
  );
  assert.throws(() => parser.push(frame({ op: "data", id: 1 }, Buffer.alloc(1001))), malformed);
  assert.equal(asked, 0);
});
