import type { AgentMetadata, ModelCard, WorkerRole } from "../protocol/index.js";

/** One live component as discovery knows it. */
export interface InstanceRecord {
  /** Unique id, also the request-plane address of the worker. */
  readonly id: string;
  readonly role: WorkerRole;
  readonly model: string;
  readonly card: ModelCard;
  /** The instance's transfer agent, for peers that move KV bytes to or from it. */
  readonly transferAgent?: AgentMetadata | undefined;
  /**
   * A worker process a planner's local connector started: where it runs, so a planner that takes
   * over (after the one that started it died) can adopt it and drain it with SIGTERM.
   */
  readonly startedBy?: PlannerWorkerOrigin | undefined;
}

/** The machine and process of a worker a planner's local connector started. */
export interface PlannerWorkerOrigin {
  readonly host: string;
  readonly pid: number;
}

/** A registration kept alive by keep-alives; it expires after its TTL without them. */
export interface Lease {
  readonly id: string;
  /** Renews the lease; returns false when it had already expired. */
  keepAlive(): Promise<boolean>;
  /** Removes the registration now. */
  revoke(): Promise<void>;
}

export type DiscoveryEvent =
  | { readonly type: "instance-added"; readonly instance: InstanceRecord }
  | { readonly type: "instance-removed"; readonly instanceId: string };

export type Unsubscribe = () => void;

/**
 * Who is alive. Embedded: an in-memory registry. Distributed: etcd leases and watches.
 */
export interface Discovery {
  /** Registers an instance under a lease of `ttlMs`. Registering an existing id replaces it. */
  register(instance: InstanceRecord, options: { ttlMs: number }): Promise<Lease>;
  /** Instances alive now. */
  list(): Promise<InstanceRecord[]>;
  /**
   * Calls `listener` with an `instance-added` event for every instance alive now, then for each
   * change. Returns a function that stops the watch.
   */
  watch(listener: (event: DiscoveryEvent) => void): Unsubscribe;
  /**
   * Claims `name` for `holder` under a lease of `ttlMs`, if nobody holds it: the lease while this
   * holder keeps it alive, `undefined` while another holds it (one planner of a deployment acts).
   * A claim whose lease lapses or is revoked can be taken by the next caller.
   */
  claim(name: string, holder: string, options: { ttlMs: number }): Promise<Lease | undefined>;
  /** Who holds `name` now, if anyone. */
  holder(name: string): Promise<string | undefined>;
  close(): Promise<void>;
}
