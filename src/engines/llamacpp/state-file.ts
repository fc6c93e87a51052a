import { open } from "node:fs/promises";
import { ArmatureError } from "../../protocol/index.js";

/** llama.cpp's sequence state file magic ("ggsq", little-endian) and the version node-llama-cpp 3.21 writes. */
const MAGIC = 0x67677371;
const VERSION = 3;

/**
 * The token ids a llama.cpp sequence state file holds, read from its header
 * (`magic u32, version u32, n_tokens u32, tokens u32[n]`). Refuses files that are not one.
 */
export async function readStateFileTokens(path: string): Promise<number[]> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (cause) {
    throw new ArmatureError("TRANSFER_FAILED", `the KV state file ${path} cannot be opened`, { cause, retryable: true });
  }
  try {
    const head = Buffer.alloc(12);
    const { bytesRead } = await handle.read(head, 0, 12, 0);
    if (bytesRead < 12 || head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== VERSION) {
      throw new ArmatureError("TRANSFER_FAILED", `${path} is not a llama.cpp sequence state file (version ${VERSION})`, {
        retryable: true,
      });
    }
    const count = head.readUInt32LE(8);
    const ids = Buffer.alloc(count * 4);
    const read = await handle.read(ids, 0, ids.length, 12);
    if (read.bytesRead < ids.length) throw new ArmatureError("TRANSFER_FAILED", `${path} is truncated`, { retryable: true });
    return Array.from({ length: count }, (_, i) => ids.readUInt32LE(i * 4));
  } finally {
    await handle.close();
  }
}
