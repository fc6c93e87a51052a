import type { Clock } from "../clock.js";
import type { Discovery, DiscoveryEvent, InstanceRecord, Lease, Unsubscribe } from "../discovery.js";

interface Entry {
  readonly instance: InstanceRecord;
  readonly leaseId: string;
  ttlMs: number;
  expiresAt: number;
}

export interface MemoryDiscoveryOptions {
  readonly clock: Clock;
  /** How often expired leases are swept; 0 sweeps only on `list` and `sweep()`. Default 1000. */
  readonly sweepIntervalMs?: number;
}

/** In-process registry with lease semantics: entries vanish when their TTL lapses without keep-alive. */
export class MemoryDiscovery implements Discovery {
  readonly #clock: Clock;
  readonly #entries = new Map<string, Entry>();
  readonly #claims = new Map<string, { holder: string; leaseId: string; ttlMs: number; expiresAt: number }>();
  readonly #listeners = new Set<(event: DiscoveryEvent) => void>();
  readonly #stop = new AbortController();
  #leaseSeq = 0;

  constructor(options: MemoryDiscoveryOptions) {
    this.#clock = options.clock;
    const interval = options.sweepIntervalMs ?? 1000;
    if (interval > 0) void this.#sweepLoop(interval);
  }

  async register(instance: InstanceRecord, options: { ttlMs: number }): Promise<Lease> {
    const leaseId = `lease-${++this.#leaseSeq}`;
    const existing = this.#entries.get(instance.id);
    if (existing) this.#remove(instance.id);
    const entry: Entry = {
      instance,
      leaseId,
      ttlMs: options.ttlMs,
      expiresAt: this.#clock.now() + options.ttlMs,
    };
    this.#entries.set(instance.id, entry);
    this.#emit({ type: "instance-added", instance });
    return {
      id: leaseId,
      keepAlive: async () => {
        const current = this.#entries.get(instance.id);
        if (current?.leaseId !== leaseId || current.expiresAt < this.#clock.now()) {
          this.sweep();
          return false;
        }
        current.expiresAt = this.#clock.now() + current.ttlMs;
        return true;
      },
      revoke: async () => {
        if (this.#entries.get(instance.id)?.leaseId === leaseId) this.#remove(instance.id);
      },
    };
  }

  async claim(name: string, holder: string, options: { ttlMs: number }): Promise<Lease | undefined> {
    const now = this.#clock.now();
    const current = this.#claims.get(name);
    if (current && current.expiresAt >= now) return undefined;
    const claim = { holder, leaseId: `lease-${++this.#leaseSeq}`, ttlMs: options.ttlMs, expiresAt: now + options.ttlMs };
    this.#claims.set(name, claim);
    return {
      id: claim.leaseId,
      keepAlive: async () => {
        if (this.#claims.get(name) !== claim || claim.expiresAt < this.#clock.now()) return false;
        claim.expiresAt = this.#clock.now() + claim.ttlMs;
        return true;
      },
      revoke: async () => {
        if (this.#claims.get(name) === claim) this.#claims.delete(name);
      },
    };
  }

  async holder(name: string): Promise<string | undefined> {
    const claim = this.#claims.get(name);
    return claim && claim.expiresAt >= this.#clock.now() ? claim.holder : undefined;
  }

  async list(): Promise<InstanceRecord[]> {
    this.sweep();
    return [...this.#entries.values()].map((e) => e.instance);
  }

  watch(listener: (event: DiscoveryEvent) => void): Unsubscribe {
    for (const entry of this.#entries.values()) listener({ type: "instance-added", instance: entry.instance });
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Removes every entry whose lease has expired. */
  sweep(): void {
    const now = this.#clock.now();
    for (const [id, entry] of this.#entries) if (entry.expiresAt < now) this.#remove(id);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    this.#listeners.clear();
  }

  #remove(id: string): void {
    this.#entries.delete(id);
    this.#emit({ type: "instance-removed", instanceId: id });
  }

  #emit(event: DiscoveryEvent): void {
    for (const listener of [...this.#listeners]) listener(event);
  }

  async #sweepLoop(intervalMs: number): Promise<void> {
    while (!this.#stop.signal.aborted) {
      try {
        await this.#clock.sleep(intervalMs, this.#stop.signal);
      } catch {
        return;
      }
      this.sweep();
    }
  }
}
