import type { Etcd3, Lease as EtcdLease, Watcher } from "etcd3";
import { instanceRecordSchema } from "../../protocol/index.js";
import type { Discovery, DiscoveryEvent, InstanceRecord, Lease, Unsubscribe } from "../discovery.js";
import { InvalidMessages } from "../invalid-messages.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";

export interface EtcdDiscoveryOptions {
  /** Key prefix of this deployment. Default `/armature/instances/`. */
  readonly prefix?: string;
  /** Key prefix of its claims (`claim`). Default the instances' prefix with `claims/` for `instances/`. */
  readonly claimPrefix?: string;
  /** Reports errors of background watches (they retry by themselves). */
  readonly onError?: (error: unknown) => void;
  /** Where malformed records are counted (they are skipped). Default: a private counter. */
  readonly invalidMessages?: InvalidMessages;
}

/**
 * Discovery on etcd v3: each instance is a key under a prefix, attached to a lease of its TTL
 * (whole seconds, at least 1; etcd expires a lease between TTL and TTL + 0.5 s). Watchers replay
 * what exists, then follow changes from the next revision, so nothing falls in between.
 */
export class EtcdDiscovery implements Discovery {
  readonly #etcd: Etcd3;
  readonly #prefix: string;
  readonly #claimPrefix: string;
  readonly #onError: (error: unknown) => void;
  readonly #watchers = new Set<Promise<Watcher | undefined>>();
  readonly #invalid: InvalidMessages;

  constructor(etcd: Etcd3, options: EtcdDiscoveryOptions = {}) {
    this.#etcd = etcd;
    this.#prefix = options.prefix ?? "/armature/instances/";
    this.#claimPrefix =
      options.claimPrefix ??
      (this.#prefix.endsWith("/instances/")
        ? `${this.#prefix.slice(0, -"instances/".length)}claims/`
        : `${this.#prefix}.claims/`);
    this.#onError = options.onError ?? (() => {});
    this.#invalid = options.invalidMessages ?? new InvalidMessages();
  }

  /** The record stored at `key`, or undefined when it is malformed or not the key's own (counted). */
  #record(key: Buffer | string, value: Buffer): InstanceRecord | undefined {
    const id = key.toString().slice(this.#prefix.length);
    let decoded: unknown;
    try {
      decoded = decodeMessage(value);
    } catch (error) {
      this.#invalid.record("instance-record", key.toString(), error);
      return undefined;
    }
    const record = this.#invalid.accept("instance-record", instanceRecordSchema, decoded, key.toString());
    if (record && record.id !== id) {
      this.#invalid.record("instance-record", key.toString(), new Error(`record of ${record.id} stored under ${id}`));
      return undefined;
    }
    return record;
  }

  async register(instance: InstanceRecord, options: { ttlMs: number }): Promise<Lease> {
    const ttlSeconds = Math.max(1, Math.ceil(options.ttlMs / 1000));
    const lease: EtcdLease = this.#etcd.lease(ttlSeconds, { autoKeepAlive: false });
    await lease.put(this.#prefix + instance.id).value(Buffer.from(encodeMessage(instance)));
    const id = await lease.grant();
    return {
      id,
      keepAlive: async () => {
        try {
          const response = await lease.keepaliveOnce();
          return Number(response.TTL) > 0;
        } catch {
          return false;
        }
      },
      revoke: async () => {
        await lease.revoke();
      },
    };
  }

  /** The key is created under a fresh lease only if it does not exist (one etcd transaction). */
  async claim(name: string, holder: string, options: { ttlMs: number }): Promise<Lease | undefined> {
    const key = this.#claimPrefix + name;
    const lease: EtcdLease = this.#etcd.lease(Math.max(1, Math.ceil(options.ttlMs / 1000)), { autoKeepAlive: false });
    const id = await lease.grant();
    const result = await this.#etcd.if(key, "Create", "==", 0).then(this.#etcd.put(key).value(holder).lease(id)).commit();
    if (!result.succeeded) {
      await lease.revoke().catch(() => {});
      return undefined;
    }
    return {
      id,
      keepAlive: async () => {
        try {
          const response = await lease.keepaliveOnce();
          return Number(response.TTL) > 0 && (await this.holder(name)) === holder;
        } catch {
          return false;
        }
      },
      revoke: async () => {
        await lease.revoke();
      },
    };
  }

  async holder(name: string): Promise<string | undefined> {
    return (await this.#etcd.get(this.#claimPrefix + name).string()) ?? undefined;
  }

  async list(): Promise<InstanceRecord[]> {
    const values = await this.#etcd.getAll().prefix(this.#prefix).buffers();
    return Object.entries(values).flatMap(([key, value]) => this.#record(key, value) ?? []);
  }

  watch(listener: (event: DiscoveryEvent) => void): Unsubscribe {
    let stopped = false;
    const started = (async (): Promise<Watcher | undefined> => {
      const snapshot = await this.#etcd.getAll().prefix(this.#prefix).exec();
      if (stopped) return undefined;
      for (const kv of snapshot.kvs) {
        const instance = this.#record(kv.key, kv.value);
        if (instance) listener({ type: "instance-added", instance });
      }
      const watcher = await this.#etcd
        .watch()
        .prefix(this.#prefix)
        .startRevision(String(Number(snapshot.header.revision) + 1))
        .create();
      watcher.on("put", (kv) => {
        const instance = stopped ? undefined : this.#record(kv.key, kv.value);
        if (instance) listener({ type: "instance-added", instance });
      });
      watcher.on("delete", (kv) => {
        if (!stopped) listener({ type: "instance-removed", instanceId: kv.key.toString().slice(this.#prefix.length) });
      });
      watcher.on("error", (error) => this.#onError(error));
      if (stopped) await watcher.cancel();
      return watcher;
    })();
    started.catch((error: unknown) => this.#onError(error));
    this.#watchers.add(started);
    return () => {
      stopped = true;
      this.#watchers.delete(started);
      void started.then((w) => w?.cancel()).catch(() => {});
    };
  }

  async close(): Promise<void> {
    const watchers = await Promise.all([...this.#watchers].map((p) => p.catch(() => undefined)));
    await Promise.all(watchers.map((w) => w?.cancel()));
    this.#watchers.clear();
  }
}
