import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ArmatureError } from "../protocol/errors.js";
import { assembleState, cutBlocks, parseSequenceState } from "./sequence-state.js";
import { cutStateSuffix, parseStateSuffix } from "./state-suffix.js";

const u32 = (...values: number[]): Buffer => Buffer.from(new Uint32Array(values).buffer);
const i32 = (...values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const u64 = (value: number): Buffer => Buffer.from(new BigUint64Array([BigInt(value)]).buffer);
const hex = (text: string): Buffer => Buffer.from(text.replace(/[ |]/g, ""), "hex");

/**
 * A hand-built state of 5 cells (tokens 10..14), one layer, V in rows: K rows of 1 byte 0x01..0x05,
 * V rows of 1 byte 0x11..0x15, one cell after the other (cell bytes 2).
 */
const state = Buffer.concat([
  u32(0x67677371, 3, 5, 10, 11, 12, 13, 14),
  u32(1, 5),
  ...[0, 1, 2, 3, 4].map((pos) => Buffer.concat([i32(pos), u32(1), i32(0)])),
  u32(0, 1), // v_trans, n_layer
  i32(1),
  u64(1),
  hex("01 02 03 04 05"),
  i32(1),
  u64(1),
  hex("11 12 13 14 15"),
]);
const shapeKey = "ggsq3/vt0/k1:1,v1:1";

function refusal(code: string, message: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof ArmatureError);
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  };
}

describe("KV state suffixes", () => {
  const layout = parseSequenceState(state);

  test("the state from token 2 on, in blocks of 2: bytes worked by hand", () => {
    assert.equal(layout.shape.shapeKey, shapeKey);
    const suffix = cutStateSuffix(state, layout, 2, 2);
    const expected = Buffer.concat([
      u32(0x53564b41, 1, 2, 2, 3, 2, shapeKey.length),
      Buffer.from(shapeKey),
      u32(12, 13, 14),
      hex("03 04 | 13 14"), // block 1: K of cells 2, 3, then V of cells 2, 3
      hex("05 | 15"), // the partial last block: cell 4
    ]);
    assert.deepEqual(suffix, expected);
    const parsed = parseStateSuffix(suffix);
    assert.deepEqual(
      { ...parsed, blocks: parsed.blocks.map((b) => b.toString("hex")) },
      { blockSize: 2, fromToken: 2, tokens: [12, 13, 14], cellBytes: 2, shapeKey, blocks: ["03041314", "0515"] },
    );
    // The receiver's own first block before the suffix's gives the state back byte for byte.
    assert.deepEqual(
      assembleState(layout.shape, [10, 11, 12, 13, 14], [...cutBlocks(state, layout, 2, 0, 1), ...parsed.blocks]),
      state,
    );
  });

  test("a suffix of whole blocks, and one of the partial block alone", () => {
    const lastOnly = parseStateSuffix(cutStateSuffix(state, layout, 2, 4));
    assert.deepEqual(lastOnly.tokens, [14]);
    assert.deepEqual(lastOnly.blocks, [hex("05 15")]);
    const fourCellState = Buffer.concat([
      u32(0x67677371, 3, 4, 10, 11, 12, 13),
      u32(1, 4),
      ...[0, 1, 2, 3].map((pos) => Buffer.concat([i32(pos), u32(1), i32(0)])),
      u32(0, 1),
      i32(1),
      u64(1),
      hex("01 02 03 04"),
      i32(1),
      u64(1),
      hex("11 12 13 14"),
    ]);
    const fourCells = parseSequenceState(fourCellState);
    const wholeBlocks = parseStateSuffix(cutStateSuffix(fourCellState, fourCells, 2, 2));
    assert.deepEqual(wholeBlocks.blocks, [hex("03 04 13 14")]);
    assert.deepEqual(
      assembleState(fourCells.shape, [10, 11, 12, 13], [...cutBlocks(fourCellState, fourCells, 2, 0, 1), ...wholeBlocks.blocks]),
      fourCellState,
    );
  });

  test("refuses a cut it cannot make, and bytes that are not a suffix, saying what", () => {
    assert.throws(
      () => cutStateSuffix(state, layout, 2, 1),
      refusal("NOT_SUPPORTED", /from token 1 of a 5-token state in blocks of 2/),
    );
    assert.throws(() => cutStateSuffix(state, layout, 2, 6), refusal("NOT_SUPPORTED", /from token 6/));
    assert.throws(() => cutStateSuffix(state, layout, 0, 0), refusal("NOT_SUPPORTED", /block size 0/));
    const suffix = cutStateSuffix(state, layout, 2, 2);
    const withVersion = Buffer.from(suffix);
    withVersion.writeUInt32LE(2, 4);
    const withBlockSize = Buffer.from(suffix);
    withBlockSize.writeUInt32LE(3, 8); // from token 2 is not a multiple of 3
    const cases: [string, Buffer, string, RegExp][] = [
      ["a state file", state, "TRANSFER_CORRUPTED", /magic is 0x67677371/],
      ["another version", withVersion, "NOT_SUPPORTED", /version 2/],
      ["truncated", suffix.subarray(0, suffix.length - 1), "TRANSFER_CORRUPTED", /has \d+ bytes|; its header says/],
      ["trailing bytes", Buffer.concat([suffix, hex("00")]), "TRANSFER_CORRUPTED", /its header says/],
      ["misaligned blocks", withBlockSize, "TRANSFER_CORRUPTED", /blocks of 3 tokens from token 2/],
      ["too short", suffix.subarray(0, 10), "TRANSFER_CORRUPTED", /the header alone/],
    ];
    for (const [name, input, code, message] of cases) assert.throws(() => parseStateSuffix(input), refusal(code, message), name);
  });
});
