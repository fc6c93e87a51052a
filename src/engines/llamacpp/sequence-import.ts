import { rm } from "node:fs/promises";
import type { LlamaContextSequence } from "node-llama-cpp";
import { ArmatureError } from "../../protocol/index.js";
import { assembleImportedState } from "./kv-suffix.js";
import type { KvbmConnector } from "./kvbm-connector.js";
import { sharedPrefixLength } from "./sequence-slots.js";
import { readStateFileTokens } from "./state-file.js";

/** The sequence a decode worker loads a prefill worker's export into. */
export interface ImportTarget {
  readonly sequence: LlamaContextSequence;
  /** The worker's block manager, where a suffix's first blocks may be loaded from. */
  readonly kvbm: KvbmConnector | undefined;
  readonly blockSize: number;
  /** Told what the sequence holds after the load, whether it succeeded or not (KV events). */
  readonly changed: (tokens: readonly number[]) => void;
}

/**
 * Loads a prefill worker's export into the sequence: a whole state, or a suffix after the prompt's
 * first `fromToken` tokens as this worker holds them (refused, retryably, when it no longer does).
 */
export async function importHandoff(
  target: ImportTarget,
  tokens: readonly number[],
  path: string,
  fromToken: number | undefined,
): Promise<void> {
  if (!fromToken) return importState(target, tokens, path);
  const whole = `${path}.whole`;
  try {
    await assembleImportedState(target, tokens, fromToken, path, whole);
    await importState(target, tokens, whole);
  } finally {
    await rm(whole, { force: true });
  }
}

/** Loads a prefill worker's state into the sequence; it must hold exactly the prompt. */
async function importState(target: ImportTarget, tokens: readonly number[], path: string): Promise<void> {
  const held = await readStateFileTokens(path);
  if (held.length !== tokens.length || sharedPrefixLength(held, tokens) !== tokens.length) {
    throw new ArmatureError("TRANSFER_FAILED", "the imported KV state holds other tokens than the prompt", { retryable: true });
  }
  const { sequence } = target;
  // Empty the sequence first, so a load that fails half-way leaves it empty rather than inconsistent.
  if (sequence.nextTokenIndex > 0) await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
  try {
    await sequence.loadStateFromFile(path, { acceptRisk: true });
  } catch (cause) {
    throw new ArmatureError("TRANSFER_FAILED", `llama.cpp could not load the KV state: ${(cause as Error).message}`, {
      cause,
      retryable: true,
    });
  } finally {
    target.changed(sequence.contextTokens);
  }
}
