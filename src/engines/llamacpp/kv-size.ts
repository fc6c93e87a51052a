/**
 * KV cache bytes per token from a GGUF's metadata: layers × 2 (K and V) × the KV width
 * (embedding width × KV heads / heads) × `elementBytes` (2: llama.cpp's default F16 cache). Undefined when
 * the metadata lacks a field.
 */
export function kvBytesPerToken(metadata: unknown, elementBytes = 2): number | undefined {
  const m = metadata as Record<string, Record<string, unknown> | undefined> & { general?: { architecture?: unknown } };
  const arch = m.general?.architecture;
  if (typeof arch !== "string") return undefined;
  const section = m[arch] as
    | { block_count?: unknown; embedding_length?: unknown; attention?: { head_count?: unknown; head_count_kv?: unknown } }
    | undefined;
  const layers = section?.block_count;
  const width = section?.embedding_length;
  const heads = section?.attention?.head_count;
  const kvHeads = section?.attention?.head_count_kv ?? heads;
  if (typeof layers !== "number" || typeof width !== "number" || typeof heads !== "number" || typeof kvHeads !== "number") {
    return undefined;
  }
  return Math.round(layers * 2 * ((width * kvHeads) / heads) * elementBytes);
}
