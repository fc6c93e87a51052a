import assert from "node:assert/strict";
import { test } from "node:test";
import { headers, type Msg } from "@nats-io/transport-node";
import { isArmatureError } from "../../protocol/index.js";
import { encodeMessage } from "../wire-codec.js";
import { FrameAssembler, PART_HEADER } from "./stream-framing.js";

const part = (data: Uint8Array, label?: string): Msg => {
  const h = label ? headers() : undefined;
  if (h && label) h.set(PART_HEADER, label);
  return { data, headers: h } as unknown as Msg;
};

const brokenStream = (e: unknown): boolean => isArmatureError(e) && e.code === "WORKER_UNAVAILABLE" && e.retryable;

test("parts in order make the message again", () => {
  const bytes = encodeMessage({ t: "item", v: "x".repeat(100) });
  const assembler = new FrameAssembler(1000);
  assert.equal(assembler.accept(part(bytes.subarray(0, 40), "1/3")), undefined);
  assert.equal(assembler.accept(part(bytes.subarray(40, 80), "2/3")), undefined);
  assert.deepEqual(assembler.accept(part(bytes.subarray(80), "3/3")), { t: "item", v: "x".repeat(100) });
  assert.deepEqual(assembler.accept(part(encodeMessage({ t: "end" }))), { t: "end" });
});

test("a part out of order or a whole message inside a split one breaks the stream, retryably", () => {
  assert.throws(() => new FrameAssembler(1000).accept(part(new Uint8Array(4), "2/3")), brokenStream);
  const assembler = new FrameAssembler(1000);
  assembler.accept(part(new Uint8Array(4), "1/3"));
  assert.throws(() => assembler.accept(part(encodeMessage({ t: "end" }))), brokenStream);
});

test("a split message may not grow past the caller's limit", () => {
  const assembler = new FrameAssembler(10);
  assembler.accept(part(new Uint8Array(8), "1/1000"));
  assert.throws(() => assembler.accept(part(new Uint8Array(8), "2/1000")), brokenStream);
});
