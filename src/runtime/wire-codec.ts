/**
 * JSON on the wire, with u64 hashes (bigint) kept exact as `{"$u64":"<decimal>"}`. Every message
 * armature sends over NATS goes through this codec.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encodeMessage(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? { $u64: v.toString() } : v)));
}

export function decodeMessage(bytes: Uint8Array): unknown {
  return JSON.parse(decoder.decode(bytes), (_key, v: unknown) => {
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      const keys = Object.keys(v);
      if (keys.length === 1 && keys[0] === "$u64") return BigInt((v as { $u64: string }).$u64);
    }
    return v;
  });
}
