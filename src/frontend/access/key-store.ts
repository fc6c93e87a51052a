import { createHash, timingSafeEqual } from "node:crypto";
import type { ApiKeySpec } from "./api-keys-file.js";

/** A known key as the rest of the frontend sees it: its name and rules, not the secret. */
export interface ApiKeyEntry {
  readonly name: string;
  readonly requestsPerMinute: number | undefined;
  readonly tokensPerMinute: number | undefined;
  readonly maxConcurrent: number | undefined;
  /** Absent: every model. */
  readonly models: ReadonlySet<string> | undefined;
  /** The priority of this key's requests that name none. */
  readonly defaultPriority?: number | undefined;
  /** The most urgent (lowest) priority this key's requests may ask for. */
  readonly priorityCeiling?: number | undefined;
}

interface StoredKey {
  readonly digest: Buffer;
  readonly entry: ApiKeyEntry;
}

/**
 * The keys the frontend accepts. It keeps SHA-256 digests, not the keys, and compares a presented
 * key against every digest with `timingSafeEqual`, without stopping at a match: digests have one
 * length whatever the key's, so neither the key's length nor how much of it matched shows in the
 * time a lookup takes.
 */
export class KeyStore {
  #keys: readonly StoredKey[];

  constructor(specs: readonly ApiKeySpec[]) {
    this.#keys = store(specs);
  }

  get size(): number {
    return this.#keys.length;
  }

  /** The entries, for the quota book (no secrets in them). */
  get entries(): readonly ApiKeyEntry[] {
    return this.#keys.map((k) => k.entry);
  }

  /** The entry whose key is `presented`, or undefined. */
  find(presented: string): ApiKeyEntry | undefined {
    const digest = sha256(presented);
    let found: ApiKeyEntry | undefined;
    for (const stored of this.#keys) {
      if (timingSafeEqual(stored.digest, digest) && found === undefined) found = stored.entry;
    }
    return found;
  }

  /** Swaps in a new key list at once (a reload); requests already admitted keep their entry. */
  replace(specs: readonly ApiKeySpec[]): void {
    this.#keys = store(specs);
  }
}

function store(specs: readonly ApiKeySpec[]): StoredKey[] {
  return specs.map((spec) => ({
    digest: sha256(spec.key),
    entry: {
      name: spec.name,
      requestsPerMinute: spec.requestsPerMinute,
      tokensPerMinute: spec.tokensPerMinute,
      maxConcurrent: spec.maxConcurrent,
      models: spec.models ? new Set(spec.models) : undefined,
      ...(spec.defaultPriority === undefined ? {} : { defaultPriority: spec.defaultPriority }),
      ...(spec.priorityCeiling === undefined ? {} : { priorityCeiling: spec.priorityCeiling }),
    },
  }));
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
