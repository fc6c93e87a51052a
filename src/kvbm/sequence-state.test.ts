import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { ensureTinyModel, LlamaCppEngine } from "../engines/index.js";
import { ArmatureError } from "../protocol/errors.js";
import { assembleState, cutBlocks, cutCells, parseSequenceState, stateTokens } from "./sequence-state.js";
import { cutStateSuffix, parseStateSuffix } from "./state-suffix.js";

const u32 = (...values: number[]): Buffer => Buffer.from(new Uint32Array(values).buffer);
const i32 = (...values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const u64 = (value: number): Buffer => Buffer.from(new BigUint64Array([BigInt(value)]).buffer);
const bytes = (...values: number[]): Buffer => Buffer.from(values);
const hex = (text: string): Buffer => Buffer.from(text.replace(/[ |]/g, ""), "hex");
const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

/** Per cell `pos i32, n_seq_id u32, seq_id i32`, in sequence 0. */
function cells(...positions: number[]): Buffer {
  return Buffer.concat(positions.map((pos) => Buffer.concat([i32(pos), u32(1), i32(0)])));
}

/**
 * A hand-built state of 4 cells (tokens 10..13) with V transposed: 2 layers, K rows of 2 bytes (type 1),
 * V of 2 elements × 2 bytes per cell. K byte values: layer 0 0x01..0x08, layer 1 0x11..0x18, cell by cell;
 * V byte values: layer 0 element 0 0x21..0x28 and element 1 0x31..0x38, layer 1 0x41..0x48 and 0x51..0x58.
 */
function transposedStream(positions = [0, 1, 2, 3]): Buffer {
  return Buffer.concat([
    u32(4),
    cells(...positions),
    u32(1, 2), // v_trans, n_layer
    i32(1),
    u64(2),
    bytes(...range(0x01, 8)),
    i32(1),
    u64(2),
    bytes(...range(0x11, 8)),
    i32(1),
    u32(2, 2), // v_element_bytes, n_embd_v_gqa
    bytes(...range(0x21, 8), ...range(0x31, 8)),
    i32(1),
    u32(2, 2),
    bytes(...range(0x41, 8), ...range(0x51, 8)),
  ]);
}

const header = (tokens = [10, 11, 12, 13]): Buffer => u32(0x67677371, 3, tokens.length, ...tokens);
const transposedState = (): Buffer => Buffer.concat([header(), u32(1), transposedStream()]);

function refusal(code: string, message: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof ArmatureError);
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  };
}

describe("hand-built states", () => {
  test("a V-transposed state: offsets, shape and blocks worked by hand", () => {
    const state = transposedState();
    const layout = parseSequenceState(state);
    // header 12 + tokens 16 + n_stream 4 + cell_count 4 = 36; cells 48 → 84; v_trans, n_layer → 92;
    // K: (12 + 8) per layer → 132; V: (12 + 16) per layer → 188.
    const { shape, ...offsets } = layout;
    assert.deepEqual(offsets, {
      tokensOffset: 12,
      cellCount: 4,
      cellsOffset: 36,
      keyOffsets: [104, 124],
      valueOffsets: [144, 172],
      totalBytes: 188,
    });
    assert.equal(shape.shapeKey, "ggsq3/vt1/k1:2,v1:2x2/k1:2,v1:2x2");
    assert.equal(shape.cellBytes, 12);
    assert.deepEqual(stateTokens(state, layout), [10, 11, 12, 13]);
    const blocks = cutBlocks(state, layout, 2, 0, 2);
    // Per block: K layer 0 | K layer 1 | V layer 0 element 0 | element 1 | V layer 1 element 0 | element 1.
    assert.deepEqual(blocks, [
      hex("01 02 03 04 | 11 12 13 14 | 21 22 23 24 | 31 32 33 34 | 41 42 43 44 | 51 52 53 54"),
      hex("05 06 07 08 | 15 16 17 18 | 25 26 27 28 | 35 36 37 38 | 45 46 47 48 | 55 56 57 58"),
    ]);
    assert.deepEqual(assembleState(shape, [10, 11, 12, 13], blocks), state);
    const firstBlockOnly = Buffer.concat([
      header([10, 11]),
      u32(1, 2),
      cells(0, 1),
      u32(1, 2),
      Buffer.concat([i32(1), u64(2), hex("01 02 03 04"), i32(1), u64(2), hex("11 12 13 14")]),
      Buffer.concat([i32(1), u32(2, 2), hex("21 22 23 24 | 31 32 33 34"), i32(1), u32(2, 2), hex("41 42 43 44 | 51 52 53 54")]),
    ]);
    assert.deepEqual(assembleState(shape, [10, 11], blocks.slice(0, 1)), firstBlockOnly);
  });

  test("empty streams around the sequence's one are kept in place", () => {
    const state = Buffer.concat([header(), u32(3, 0), transposedStream(), u32(0)]);
    const layout = parseSequenceState(state);
    assert.equal(layout.shape.streamCount, 3);
    assert.equal(layout.shape.streamIndex, 1);
    assert.deepEqual(assembleState(layout.shape, [10, 11, 12, 13], cutBlocks(state, layout, 4, 0, 1)), state);
  });

  test("only complete blocks are cut, and blocks must cover the tokens", () => {
    const state = transposedState();
    const layout = parseSequenceState(state);
    assert.equal(cutBlocks(state, layout, 3, 0, 1).length, 1);
    assert.throws(() => cutBlocks(state, layout, 3, 0, 2), refusal("NOT_SUPPORTED", /holds 1 complete blocks of 3 tokens/));
    assert.throws(
      () => assembleState(layout.shape, [10, 11, 12], cutBlocks(state, layout, 2, 0, 2)),
      refusal("NOT_SUPPORTED", /3 tokens for 2 blocks of 2/),
    );
  });

  test("cells cut as a partial block, and a partial block assembled last", () => {
    const state = transposedState();
    const layout = parseSequenceState(state);
    // Cell 2 alone: its 2 bytes in each section (K rows of layers 0 and 1, then V elements 0 and 1 of each layer).
    assert.deepEqual(cutCells(state, layout, 2, 3), hex("05 06 | 15 16 | 25 26 | 35 36 | 45 46 | 55 56"));
    assert.deepEqual(cutCells(state, layout, 0, 2), cutBlocks(state, layout, 2, 0, 1)[0]);
    assert.deepEqual(
      assembleState(layout.shape, [10, 11, 12, 13], [cutCells(state, layout, 0, 3), cutCells(state, layout, 3, 4)]),
      state,
    );
    const threeCells = Buffer.concat([
      header([10, 11, 12]),
      u32(1, 3),
      cells(0, 1, 2),
      u32(1, 2),
      Buffer.concat([i32(1), u64(2), hex("01 02 03 04 05 06"), i32(1), u64(2), hex("11 12 13 14 15 16")]),
      Buffer.concat([
        i32(1),
        u32(2, 2),
        hex("21 22 23 24 25 26 | 31 32 33 34 35 36"),
        i32(1),
        u32(2, 2),
        hex("41 42 43 44 45 46 | 51 52 53 54 55 56"),
      ]),
    ]);
    const firstBlock = cutBlocks(state, layout, 2, 0, 1);
    assert.deepEqual(assembleState(layout.shape, [10, 11, 12], [...firstBlock, cutCells(state, layout, 2, 3)]), threeCells);
    assert.throws(() => cutCells(state, layout, 2, 2), refusal("NOT_SUPPORTED", /cells 2..2: the state holds 4 cells/));
    assert.throws(() => cutCells(state, layout, 0, 5), refusal("NOT_SUPPORTED", /cells 0..5/));
    // Only the last block may be partial, and no block may be longer than the first.
    const one = cutCells(state, layout, 0, 1);
    const two = cutCells(state, layout, 1, 3);
    assert.throws(() => assembleState(layout.shape, [10, 11, 12], [one, two]), refusal("NOT_SUPPORTED", /not whole blocks/));
    assert.throws(
      () => assembleState(layout.shape, [10, 11, 12, 13], [one, cutCells(state, layout, 1, 3), cutCells(state, layout, 3, 4)]),
      refusal("NOT_SUPPORTED", /not whole blocks/),
    );
    assert.throws(
      () => assembleState(layout.shape, [10, 11, 12, 13], [...firstBlock, cutCells(state, layout, 2, 3)]),
      refusal("NOT_SUPPORTED", /4 tokens for 2 blocks of 2 \(the last of 1\)/),
    );
  });

  test("refuses what it does not understand, saying what", () => {
    const state = transposedState();
    const cases: [string, Buffer, string, RegExp][] = [
      ["bad magic", Buffer.concat([u32(0x67677372), state.subarray(4)]), "TRANSFER_CORRUPTED", /magic is 0x67677372/],
      ["other version", Buffer.concat([u32(0x67677371, 4), state.subarray(8)]), "NOT_SUPPORTED", /version 4/],
      [
        "truncated",
        state.subarray(0, 187),
        "TRANSFER_CORRUPTED",
        /truncated: V of layer 1 needs 16 bytes at 172, the state has 187/,
      ],
      ["trailing bytes", Buffer.concat([state, bytes(0)]), "TRANSFER_CORRUPTED", /1 bytes follow the KV data at 188/],
      [
        "two streams",
        Buffer.concat([header(), u32(2), transposedStream(), transposedStream()]),
        "NOT_SUPPORTED",
        /streams 0 and 1/,
      ],
      [
        "gap in positions",
        Buffer.concat([header(), u32(1), transposedStream([0, 1, 3, 4])]),
        "NOT_SUPPORTED",
        /cell 2 holds position 3/,
      ],
      ["no cells", Buffer.concat([header([]), u32(2, 0, 0)]), "NOT_SUPPORTED", /no KV cells/],
      [
        "tokens unlike cells",
        Buffer.concat([header([10, 11, 12]), u32(1), transposedStream()]),
        "NOT_SUPPORTED",
        /3 tokens but 4 KV cells/,
      ],
    ];
    for (const [name, input, code, message] of cases)
      assert.throws(() => parseSequenceState(input), refusal(code, message), name);
    const twoSequences = Buffer.from(state);
    twoSequences.writeUInt32LE(2, 36 + 12 + 4); // cell 1's n_seq_id
    assert.throws(() => parseSequenceState(twoSequences), refusal("NOT_SUPPORTED", /cell 1 belongs to 2 sequences/));
  });
});

describe("states saved by llama.cpp", () => {
  const blockSize = 16;
  let engine: LlamaCppEngine;
  let dir: string;
  let prompt: Token[];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-kvbm-"));
    engine = await LlamaCppEngine.create({ modelPath: await ensureTinyModel(), sequences: 1, contextSizePerSequence: 512 });
    const text = "The router looks at the tokens and finds the worker that holds the longest prefix. ";
    prompt = engine.model.tokenize(text.repeat(40)).slice(0, 300);
    assert.equal(prompt.length, 300);
  });
  after(async () => {
    await engine.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A context like LlamaCppEngine's: 4 sequences of 512 tokens, one thread; ids 0..3 in order. */
  async function withContext(
    options: { flashAttention?: boolean },
    run: (sequences: LlamaContextSequence[]) => Promise<void>,
  ): Promise<void> {
    const context: LlamaContext = await engine.model.createContext({ contextSize: 512, sequences: 4, threads: 1, ...options });
    try {
      await run(Array.from({ length: 4 }, () => context.getSequence()));
    } finally {
      await context.dispose();
    }
  }

  async function saved(sequence: LlamaContextSequence, tokens: readonly Token[], name: string): Promise<Buffer> {
    await sequence.evaluateWithoutGeneratingNewTokens([...tokens]);
    const path = join(dir, name);
    const { fileSize } = await sequence.saveStateToFile(path);
    const state = await readFile(path);
    assert.equal(state.length, fileSize);
    return state;
  }

  async function greedy(sequence: LlamaContextSequence, tokens: readonly Token[], count: number): Promise<number[]> {
    const out: number[] = [];
    for await (const token of sequence.evaluate([...tokens], { temperature: 0, yieldEogToken: true })) {
      out.push(token);
      if (out.length === count) break;
    }
    return out;
  }

  test("format pin: the layout of a saved state", async () => {
    await withContext({}, async (sequences) => {
      const state = await saved(sequences[1]!, prompt, "pin.bin");
      assert.equal(state.readUInt32LE(0), 0x67677371);
      const layout = parseSequenceState(state);
      const { shape } = layout;
      assert.equal(shape.version, 3);
      // Without a unified KV cache, llama.cpp keeps one stream per sequence and writes them all.
      assert.equal(shape.streamCount, 4);
      assert.equal(shape.streamIndex, 1);
      assert.equal(shape.sequenceId, 1);
      assert.equal(layout.cellCount, 300);
      assert.deepEqual(stateTokens(state, layout), prompt);
      for (let cell = 0; cell < 300; cell++) {
        const at = layout.cellsOffset + cell * 12;
        assert.deepEqual([state.readInt32LE(at), state.readUInt32LE(at + 4), state.readInt32LE(at + 8)], [cell, 1, 1]);
      }
      // From the GGUF: llama.block_count 2, embedding_length 64, 4 heads and 4 KV heads, F16 (ggml type 1)
      // cache: a K or V row is 64 × 2 = 128 bytes; flash attention (on by default on CPU) keeps V untransposed.
      const metadata = engine.model.fileInfo.metadata as unknown as { llama: { block_count: number; embedding_length: number } };
      assert.equal(shape.layers.length, metadata.llama.block_count);
      const row = metadata.llama.embedding_length * 2;
      assert.equal(shape.shapeKey, `ggsq3/vt0/k1:${row},v1:${row}/k1:${row},v1:${row}`);
      assert.equal(shape.cellBytes, engine.info.kvBytesPerToken);
      // header, tokens, n_stream, cell counts, cells, v_trans + n_layer, per layer K and V headers, rows.
      assert.equal(state.length, 12 + 4 * 300 + 4 + 4 * 4 + 12 * 300 + 8 + 2 * 2 * 12 + 300 * shape.cellBytes);
    });
  });

  for (const flashAttention of [true, false]) {
    test(`round trip byte for byte (V ${flashAttention ? "in rows" : "transposed"})`, async () => {
      await withContext({ flashAttention }, async (sequences) => {
        const tokens = prompt.slice(0, 18 * blockSize);
        const state = await saved(sequences[2]!, tokens, `round-trip-${flashAttention}.bin`);
        const layout = parseSequenceState(state);
        assert.equal(layout.shape.valueTransposed, !flashAttention);
        const blocks = cutBlocks(state, layout, blockSize, 0, 18);
        assert.equal(blocks.length, 18);
        assert.deepEqual(cutBlocks(state, layout, blockSize, 5, 9), blocks.slice(5, 9));
        assert.ok(assembleState(layout.shape, tokens, blocks).equals(state));
      });
    });

    test(`a partial last block and a state suffix round trip byte for byte (V ${flashAttention ? "in rows" : "transposed"})`, async () => {
      await withContext({ flashAttention }, async (sequences) => {
        const state = await saved(sequences[1]!, prompt, `partial-${flashAttention}.bin`);
        const layout = parseSequenceState(state);
        const blocks = cutBlocks(state, layout, blockSize, 0, 18);
        const tail = cutCells(state, layout, 288, 300);
        assert.equal(tail.length, 12 * layout.shape.cellBytes);
        assert.deepEqual(cutCells(state, layout, 16, 32), blocks[1]);
        assert.ok(assembleState(layout.shape, prompt, [...blocks, tail]).equals(state));
        // The prompt's state from token 160 on: blocks 10..17 and the 12 cells after them.
        const suffix = parseStateSuffix(cutStateSuffix(state, layout, blockSize, 160));
        assert.equal(suffix.fromToken, 160);
        assert.deepEqual(suffix.tokens, prompt.slice(160));
        assert.equal(suffix.shapeKey, layout.shape.shapeKey);
        assert.deepEqual(suffix.blocks, [...blocks.slice(10), tail]);
        assert.ok(assembleState(layout.shape, prompt, [...blocks.slice(0, 10), ...suffix.blocks]).equals(state));
      });
    });
  }

  test("a state assembled from the first blocks continues with the same greedy tokens", async () => {
    await withContext({}, async (sequences) => {
      const expected = await greedy(sequences[0]!, prompt, 16);
      assert.equal(expected.length, 16);
      const state = await saved(sequences[1]!, prompt, "prefix.bin");
      const layout = parseSequenceState(state);
      const blocks = cutBlocks(state, layout, blockSize, 0, 18);
      const target = sequences[3]!;
      for (const count of [1, 10, 18]) {
        const cached = prompt.slice(0, count * blockSize);
        const path = join(dir, `prefix-${count}.bin`);
        await writeFile(path, assembleState(layout.shape, cached, blocks.slice(0, count)));
        await target.clearHistory();
        await target.loadStateFromFile(path, { acceptRisk: true });
        assert.deepEqual(target.contextTokens, cached);
        assert.deepEqual(await greedy(target, prompt.slice(cached.length), 16), expected, `${count} blocks`);
      }
      // The whole prompt, its last 12 tokens a partial block: nothing is left to evaluate but the next token.
      const path = join(dir, "prefix-partial.bin");
      await writeFile(path, assembleState(layout.shape, prompt, [...blocks, cutCells(state, layout, 288, 300)]));
      await target.clearHistory();
      await target.loadStateFromFile(path, { acceptRisk: true });
      assert.deepEqual(target.contextTokens, prompt);
      const next = expected[0] as Token;
      assert.deepEqual([next, ...(await greedy(target, [next], 15))], expected, "whole prompt with a partial block");
    });
  });
});
