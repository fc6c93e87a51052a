import type { Clock } from "../../runtime/index.js";
import type { ApiKeyEntry } from "./key-store.js";

const MINUTE_MS = 60_000;

/**
 * A token bucket that holds up to `capacity` and refills `capacity` per minute, continuously. It
 * starts full. `take` may drive it below zero: a request's tokens are known only when it ends, and
 * an overdraft is paid back by waiting.
 */
export class TokenBucket {
  #capacity: number;
  #level: number;
  #at: number;

  constructor(capacity: number, now: number) {
    this.#capacity = capacity;
    this.#level = capacity;
    this.#at = now;
  }

  get capacity(): number {
    return this.#capacity;
  }

  level(now: number): number {
    const elapsed = Math.max(0, now - this.#at);
    this.#level = Math.min(this.#capacity, this.#level + (elapsed * this.#capacity) / MINUTE_MS);
    this.#at = Math.max(this.#at, now);
    return this.#level;
  }

  take(amount: number, now: number): void {
    this.#level = this.level(now) - amount;
  }

  /** Milliseconds until the bucket holds `amount` again (0 when it does now). */
  msUntil(amount: number, now: number): number {
    const missing = amount - this.level(now);
    return missing <= 0 ? 0 : (missing * MINUTE_MS) / this.#capacity;
  }

  /** A new capacity (a reload): the level is kept, clipped to it. */
  resize(capacity: number, now: number): void {
    this.level(now);
    this.#capacity = capacity;
    this.#level = Math.min(this.#level, capacity);
  }
}

export type QuotaLimit = "requests_per_minute" | "tokens_per_minute" | "max_concurrent";

/** Why a request was refused and when the client may try again. */
export interface QuotaDenial {
  readonly limit: QuotaLimit;
  /** The configured limit that was hit. */
  readonly allowed: number;
  /** Whole seconds, at least 1: `Retry-After`. */
  readonly retryAfterSeconds: number;
}

/** One admitted request's hold on its key's quota. */
export interface QuotaLease {
  /** Charges the request's tokens (prompt + completion) to the key's token bucket. */
  debit(tokens: number): void;
  /** Frees the request's concurrency slot. Idempotent. */
  release(): void;
}

/** One key's limits and what is used of them: two buckets and an in-flight count. */
export class KeyQuota {
  readonly #clock: Pick<Clock, "now">;
  #requests: TokenBucket | undefined;
  #tokens: TokenBucket | undefined;
  #maxConcurrent: number | undefined;
  #inflight = 0;

  constructor(entry: ApiKeyEntry, clock: Pick<Clock, "now">) {
    this.#clock = clock;
    this.update(entry);
  }

  get inflight(): number {
    return this.#inflight;
  }

  /** Applies new limits (a reload) keeping what was used; a limit removed forgets its bucket. */
  update(entry: ApiKeyEntry): void {
    const now = this.#clock.now();
    this.#requests = rebucket(this.#requests, entry.requestsPerMinute, now);
    this.#tokens = rebucket(this.#tokens, entry.tokensPerMinute, now);
    this.#maxConcurrent = entry.maxConcurrent;
  }

  /**
   * Admits one request or says which limit refuses it. Checks, in order: a free concurrency slot,
   * a token bucket not yet exhausted (at least one token), a request in the request bucket. A
   * refused request uses nothing; an admitted one takes one request and one slot.
   */
  admit(): QuotaLease | QuotaDenial {
    const now = this.#clock.now();
    if (this.#maxConcurrent !== undefined && this.#inflight >= this.#maxConcurrent) {
      // No clock says when a slot frees; a second is the shortest Retry-After there is.
      return { limit: "max_concurrent", allowed: this.#maxConcurrent, retryAfterSeconds: 1 };
    }
    const tokens = this.#tokens;
    if (tokens && tokens.level(now) < 1) return denial("tokens_per_minute", tokens, now);
    const requests = this.#requests;
    if (requests && requests.level(now) < 1) return denial("requests_per_minute", requests, now);
    requests?.take(1, now);
    this.#inflight++;
    let released = false;
    return {
      debit: (count) => {
        if (count > 0) this.#tokens?.take(count, this.#clock.now());
      },
      release: () => {
        if (released) return;
        released = true;
        this.#inflight--;
      },
    };
  }
}

export function isQuotaDenial(outcome: QuotaLease | QuotaDenial): outcome is QuotaDenial {
  return "limit" in outcome;
}

/** The quota of every key, by key name, kept across reloads for names that stay. */
export class QuotaBook {
  readonly #clock: Pick<Clock, "now">;
  readonly #quotas = new Map<string, KeyQuota>();

  constructor(entries: readonly ApiKeyEntry[], clock: Pick<Clock, "now">) {
    this.#clock = clock;
    this.sync(entries);
  }

  /** Makes the book match a key list: new names get fresh quotas, kept names new limits, gone names are dropped. */
  sync(entries: readonly ApiKeyEntry[]): void {
    const names = new Set(entries.map((e) => e.name));
    for (const name of this.#quotas.keys()) if (!names.has(name)) this.#quotas.delete(name);
    for (const entry of entries) {
      const quota = this.#quotas.get(entry.name);
      if (quota) quota.update(entry);
      else this.#quotas.set(entry.name, new KeyQuota(entry, this.#clock));
    }
  }

  get(name: string): KeyQuota | undefined {
    return this.#quotas.get(name);
  }
}

function rebucket(bucket: TokenBucket | undefined, perMinute: number | undefined, now: number): TokenBucket | undefined {
  if (perMinute === undefined) return undefined;
  if (!bucket) return new TokenBucket(perMinute, now);
  bucket.resize(perMinute, now);
  return bucket;
}

function denial(limit: QuotaLimit, bucket: TokenBucket, now: number): QuotaDenial {
  return {
    limit,
    allowed: bucket.capacity,
    // Whole milliseconds first, so float dust (20000.000000004 ms) does not add a second.
    retryAfterSeconds: Math.max(1, Math.ceil(Math.round(bucket.msUntil(1, now)) / 1000)),
  };
}
