import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BLOCK_RECORD_HEADER_BYTES,
  type BlockRecord,
  decodeBlockRecord,
  encodeBlockRecord,
  readBlockRecordHeader,
} from "./block-record.js";

const record: BlockRecord = {
  hash: 0x0123456789abcdefn,
  parent: 0xfedcba9876543210n,
  tokensHash: 42n,
  layout: 7n,
  payload: Buffer.from("the K and V rows of sixteen cells"),
};
const expected = { hash: record.hash, layout: record.layout };

test("a record decodes to what was encoded, with its header at fixed offsets", () => {
  const bytes = encodeBlockRecord(record);
  assert.equal(bytes.length, BLOCK_RECORD_HEADER_BYTES + record.payload.length);
  assert.equal(bytes.subarray(0, 4).toString("latin1"), "AKVB");
  assert.equal(bytes.readBigUInt64LE(16), record.hash);
  assert.deepEqual(decodeBlockRecord(bytes, expected, "test"), record);
  assert.equal(readBlockRecordHeader(encodeBlockRecord({ ...record, parent: null }), "test").parent, null);
});

test("a flipped payload byte, a truncation, another block or another layout are refused as corrupted", () => {
  const flipped = encodeBlockRecord(record);
  flipped.writeUInt8((flipped.at(BLOCK_RECORD_HEADER_BYTES + 3) ?? 0) ^ 0x01, BLOCK_RECORD_HEADER_BYTES + 3);
  const cases: Array<[Buffer, { hash: bigint; layout: bigint }, RegExp]> = [
    [flipped, expected, /checksum/],
    [encodeBlockRecord(record).subarray(0, BLOCK_RECORD_HEADER_BYTES + 5), expected, /header says/],
    [encodeBlockRecord(record), { ...expected, hash: 1n }, /not 0000000000000001/],
    [encodeBlockRecord(record), { ...expected, layout: 8n }, /another KV layout/],
    [Buffer.from("not a block"), expected, /not an armature KV block/],
  ];
  for (const [bytes, want, message] of cases) {
    assert.throws(
      () => decodeBlockRecord(bytes, want, "test"),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, "TRANSFER_CORRUPTED");
        assert.match(e.message, message);
        return true;
      },
    );
  }
});
