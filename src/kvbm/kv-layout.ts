import { open } from "node:fs/promises";
import { xxh3 } from "@node-rs/xxhash";

/** Samples of the model file hashed for its fingerprint, and their size. */
const SAMPLES = 16;
const SAMPLE_BYTES = 64 * 1024;

/**
 * The fingerprint every stored block carries: the model file (its size and 16 samples of 64 KiB
 * spread over it, so two fine-tunes of one architecture differ) and the KV layout llama.cpp saves
 * (`shapeKey`: layer count, element types, row sizes). A block is only ever loaded into a model
 * with the same fingerprint.
 */
export async function kvLayoutFingerprint(modelPath: string, shapeKey: string): Promise<bigint> {
  const handle = await open(modelPath, "r");
  try {
    const { size } = await handle.stat();
    const parts: Buffer[] = [Buffer.from(`${size}\u0000${shapeKey}\u0000`)];
    for (let i = 0; i < SAMPLES; i++) {
      const offset = Math.floor(((size - SAMPLE_BYTES) * i) / (SAMPLES - 1));
      const sample = Buffer.alloc(Math.min(SAMPLE_BYTES, size));
      const { bytesRead } = await handle.read(sample, 0, sample.length, Math.max(0, offset));
      parts.push(sample.subarray(0, bytesRead));
    }
    return xxh3.xxh64(Buffer.concat(parts));
  } finally {
    await handle.close();
  }
}
