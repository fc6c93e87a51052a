import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { cutBlocks, cutCells, parseSequenceState, stateTokens } from "../../kvbm/index.js";
import { ensureTinyModel } from "../tiny-model/model-cache.js";
import { assembleImportedState, exportState } from "./kv-suffix.js";
import { LlamaCppEngine } from "./llamacpp-engine.js";

// The decode side's assembly, byte for byte: its own first blocks, then the prefill side's suffix.
// (Greedy tokens of the tiny test model do not show a misplaced prefix; the bytes do.)
const BLOCK = 16;
let engine: LlamaCppEngine;
let context: LlamaContext;
let prefill: LlamaContextSequence;
let decode: LlamaContextSequence;
let dir: string;
let prompt: Token[];
let other: Token[];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "armature-kv-suffix-"));
  engine = await LlamaCppEngine.create({ modelPath: await ensureTinyModel(), sequences: 1, contextSizePerSequence: 256 });
  const tokens = engine.model.tokenize("Blocks the decode worker holds stay where they are. ".repeat(30));
  // 100 tokens shared, then each prompt its own: 2 whole blocks, then 6 tokens of the 7th.
  prompt = tokens.slice(0, 100);
  other = [...tokens.slice(0, 40), ...tokens.slice(0, 60).reverse()];
  context = await engine.model.createContext({ contextSize: 512, sequences: 2, threads: 1 });
  [prefill, decode] = [context.getSequence(), context.getSequence()] as [LlamaContextSequence, LlamaContextSequence];
  await prefill.evaluateWithoutGeneratingNewTokens(prompt);
  await decode.evaluateWithoutGeneratingNewTokens(other);
});
after(async () => {
  await context.dispose();
  await engine.close();
  await rm(dir, { recursive: true, force: true });
});

test("the assembled state holds the decode sequence's own first blocks and the prefill's cells after them", async () => {
  const whole = await exportState(prefill, join(dir, "whole.state"), 0, BLOCK);
  const part = await exportState(prefill, join(dir, "part.state"), 32, BLOCK);
  assert.deepEqual(part.fromToken, 32);
  assert.equal(part.wholeBytes, whole.bytes);
  assert.ok(part.bytes < whole.bytes);
  const out = join(dir, "assembled.state");
  const held = { sequence: decode, kvbm: undefined, blockSize: BLOCK };
  await assembleImportedState(held, prompt, 32, (part as { path: string }).path, out);
  const assembled = await readFile(out);
  const layout = parseSequenceState(assembled);
  assert.deepEqual(stateTokens(assembled, layout), prompt);
  await decode.saveStateToFile(join(dir, "decode.state"));
  const own = await readFile(join(dir, "decode.state"));
  const ownLayout = parseSequenceState(own);
  const source = await readFile((whole as { path: string }).path);
  const sourceLayout = parseSequenceState(source);
  assert.equal(layout.shape.streamIndex, ownLayout.shape.streamIndex, "laid out for the decode sequence's stream");
  assert.deepEqual(cutBlocks(assembled, layout, BLOCK, 0, 2), cutBlocks(own, ownLayout, BLOCK, 0, 2));
  assert.deepEqual(cutCells(assembled, layout, 32, 100), cutCells(source, sourceLayout, 32, 100));
  // And it loads: the decode sequence then holds the whole prompt.
  await decode.clearHistory();
  await decode.loadStateFromFile(out, { acceptRisk: true });
  assert.deepEqual(decode.contextTokens, prompt);
});

test("a decode sequence that shares fewer tokens than the suffix starts at is refused, untouched", async () => {
  await decode.clearHistory();
  await decode.evaluateWithoutGeneratingNewTokens(other);
  const part = await exportState(prefill, join(dir, "far.state"), 48, BLOCK);
  const held = { sequence: decode, kvbm: undefined, blockSize: BLOCK };
  await assert.rejects(assembleImportedState(held, prompt, 48, (part as { path: string }).path, join(dir, "no.state")), {
    code: "TRANSFER_FAILED",
    message: /no longer holds the prompt's first 48 tokens \(its sequence 40\)/,
  });
  assert.deepEqual(decode.contextTokens, other);
  await assert.rejects(assembleImportedState({ ...held, blockSize: 8 }, prompt, 32, join(dir, "part.state"), join(dir, "x")), {
    code: "TRANSFER_FAILED",
    message: /in blocks of 16, not the prompt's 68 from token 32 in blocks of 8/,
  });
});
