import { readFile, rename, rm, writeFile } from "node:fs/promises";
import type { LlamaContextSequence } from "node-llama-cpp";
import {
  assembleState,
  cutBlocks,
  cutStateSuffix,
  parseSequenceState,
  parseStateSuffix,
  type StateShape,
} from "../../kvbm/index.js";
import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import type { KvExport } from "../engine.js";
import type { KvbmConnector } from "./kvbm-connector.js";
import { sharedPrefixLength } from "./sequence-slots.js";

/**
 * Saves a prefilled sequence's state for a decode worker at `path`: the whole state, or, with
 * `fromToken` above 0, a KV state suffix of the tokens from there on (the decode worker holds the
 * rest). node-llama-cpp saves only whole states, so the suffix is cut from a save beside `path`. A
 * state that cannot be cut (cells moved by a context shift) goes whole.
 */
export async function exportState(
  sequence: LlamaContextSequence,
  path: string,
  fromToken: number,
  blockSize: number,
): Promise<KvExport> {
  if (fromToken === 0) {
    const { fileSize } = await sequence.saveStateToFile(path);
    return { format: "llamacpp-sequence-state", path, bytes: fileSize };
  }
  const whole = `${path}.whole`;
  try {
    const { fileSize } = await sequence.saveStateToFile(whole);
    const state = await readFile(whole);
    let suffix: Buffer;
    try {
      suffix = cutStateSuffix(state, parseSequenceState(state), blockSize, fromToken);
    } catch {
      await rename(whole, path);
      return { format: "llamacpp-sequence-state", path, bytes: fileSize };
    }
    await writeFile(path, suffix);
    return { format: "llamacpp-sequence-state", path, bytes: suffix.length, fromToken, wholeBytes: fileSize };
  } finally {
    await rm(whole, { force: true });
  }
}

/** Where a decode worker may hold a prompt's first blocks: the sequence its request holds, and its KV tiers. */
export interface HeldPrefix {
  readonly sequence: LlamaContextSequence;
  readonly kvbm: KvbmConnector | undefined;
  readonly blockSize: number;
}

/**
 * Writes the prompt's whole state to `outPath` from the KV state suffix at `suffixPath` (tokens
 * `fromToken`.. from the prefill worker) and the first `fromToken` tokens' KV this worker holds:
 * the sequence's own cells (cut from a save of it, at `outPath` meanwhile) or else the blocks its KV
 * tiers store. Throws a retryable `TRANSFER_FAILED` when it holds less than that, whatever the
 * router's KV index said, or when the suffix does not fit (another prompt, start, block size or KV
 * layout); the caller then prefills the prompt here. The sequence is not changed.
 */
export async function assembleImportedState(
  held: HeldPrefix,
  tokens: readonly number[],
  fromToken: number,
  suffixPath: string,
  outPath: string,
): Promise<void> {
  try {
    const suffix = parseStateSuffix(await readFile(suffixPath));
    if (
      suffix.fromToken !== fromToken ||
      suffix.blockSize !== held.blockSize ||
      suffix.tokens.length !== tokens.length - fromToken ||
      sharedPrefixLength(suffix.tokens, tokens.slice(fromToken)) !== suffix.tokens.length
    ) {
      throw refused(
        `the KV state suffix holds ${suffix.tokens.length} tokens from token ${suffix.fromToken} in blocks of ${suffix.blockSize}, not the prompt's ${tokens.length - fromToken} from token ${fromToken} in blocks of ${held.blockSize}`,
      );
    }
    const count = fromToken / held.blockSize;
    const prefix = (await ownBlocks(held, tokens, count, outPath)) ?? (await held.kvbm?.storedBlocks(tokens, count));
    if (!prefix) {
      const device = sharedPrefixLength(held.sequence.contextTokens, tokens);
      throw refused(
        `this worker no longer holds the prompt's first ${fromToken} tokens (its sequence ${device}${held.kvbm ? ", its KV tiers fewer" : ""})`,
      );
    }
    if (prefix.shape.shapeKey !== suffix.shapeKey) {
      throw refused(`the suffix's KV layout ${suffix.shapeKey} is not this worker's ${prefix.shape.shapeKey}`);
    }
    await writeFile(outPath, assembleState(prefix.shape, tokens, [...prefix.blocks, ...suffix.blocks]));
  } catch (error) {
    if (isArmatureError(error) && error.code === "TRANSFER_FAILED") throw error;
    throw refused(`the KV state suffix cannot be used: ${(error as Error).message}`, error);
  }
}

/** The first `count` blocks of the sequence's own cells, when it holds them and its state can be cut. */
async function ownBlocks(
  held: HeldPrefix,
  tokens: readonly number[],
  count: number,
  scratch: string,
): Promise<{ blocks: Buffer[]; shape: StateShape } | undefined> {
  if (sharedPrefixLength(held.sequence.contextTokens, tokens) < count * held.blockSize) return undefined;
  try {
    await held.sequence.saveStateToFile(scratch);
    const state = await readFile(scratch);
    const layout = parseSequenceState(state);
    return { blocks: cutBlocks(state, layout, held.blockSize, 0, count), shape: layout.shape };
  } catch {
    // Cells moved by a context shift, say: the tiers may still have the blocks.
    return undefined;
  } finally {
    await rm(scratch, { force: true });
  }
}

function refused(why: string, cause?: unknown): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `KV import refused: ${why}; the prompt is prefilled here`, {
    cause,
    retryable: true,
  });
}
