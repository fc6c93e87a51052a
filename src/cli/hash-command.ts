import { parseArgs } from "node:util";
import { ArmatureError, hashBlocks } from "../protocol/index.js";

export const HASH_USAGE = "usage: armature hash --block-size B --tokens 1,2,3,… [--lora NAME] [--json]";

/**
 * `armature hash`: prints the Dynamo-compatible local and sequence hashes of the full blocks of a
 * token list, to compare with what an engine or router reports when block sizes seem not to match.
 */
export function hashCommand(argv: readonly string[], write: (text: string) => void): number {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      "block-size": { type: "string" },
      tokens: { type: "string" },
      lora: { type: "string" },
      json: { type: "boolean", default: false },
    },
    strict: true,
  });
  const blockSize = Number(values["block-size"]);
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new ArmatureError("CONFIG_INVALID", `--block-size must be a positive integer\n${HASH_USAGE}`);
  }
  const tokens = (values.tokens ?? "")
    .split(",")
    .filter((t) => t.trim() !== "")
    .map(Number);
  if (tokens.length === 0 || tokens.some((t) => !Number.isInteger(t) || t < 0 || t > 0xffffffff)) {
    throw new ArmatureError("CONFIG_INVALID", `--tokens must be comma-separated token ids (u32)\n${HASH_USAGE}`);
  }
  const { local, sequence } = hashBlocks(tokens, blockSize, values.lora);
  const blocks = local.map((l, i) => ({ local: l.toString(), sequence: (sequence[i] as bigint).toString() }));
  if (values.json) {
    write(`${JSON.stringify({ block_size: blockSize, blocks })}\n`);
    return 0;
  }
  const ignored = tokens.length % blockSize;
  write(`block size ${blockSize}: ${blocks.length} full block(s)${ignored ? `, ${ignored} trailing token(s) not hashed` : ""}\n`);
  blocks.forEach((b, i) => {
    write(`${String(i).padStart(4)}  local ${b.local.padStart(20)}  sequence ${b.sequence.padStart(20)}\n`);
  });
  return 0;
}
