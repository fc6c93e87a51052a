import { xxh3 } from "@node-rs/xxhash";

/** XXH3-64 of a byte range, as a decimal string (JSON-safe); every backend checks it per transfer. */
export function checksum(bytes: Uint8Array): string {
  return xxh3.xxh64(bytes).toString();
}
