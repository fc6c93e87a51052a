import type { WorkerRole } from "../../protocol/index.js";
import type { Clock } from "../../runtime/index.js";
import {
  checkReplicaCount,
  connectorClosed,
  type ReplicaCount,
  roleNotConfigured,
  SCALING_ROLES,
  type ScalingConnector,
} from "./scaling-connector.js";

/** How the simulation adds and removes its workers; the connector decides when. */
export interface SimulatedWorkers {
  /** Adds a worker of `role` that takes requests from now on; returns its id. */
  addWorker(role: WorkerRole): string | Promise<string>;
  /** Stops sending new requests to `id`; resolves once the requests it has are finished. */
  drainWorker(role: WorkerRole, id: string): Promise<void>;
  /** Takes `id` out of the simulation; it is idle by then. */
  removeWorker(role: WorkerRole, id: string): void | Promise<void>;
}

export interface VirtualConnectorOptions {
  /** Usually the replay's `VirtualClock`. */
  readonly clock: Clock;
  readonly workers: SimulatedWorkers;
  /** The pools it scales. Default all three roles. */
  readonly roles?: readonly WorkerRole[];
  /** Modelled time from a scale-up to the worker taking requests (process start, model load). Default 30 s. */
  readonly startupDelayMs?: number;
  /** Workers that exist already, ready, per role. */
  readonly initialWorkers?: Partial<Record<WorkerRole, readonly string[]>>;
  /** Told when a `SimulatedWorkers` call fails; that worker is then not counted. Default: ignored. */
  readonly onError?: (error: unknown, role: WorkerRole) => void;
}

/** A worker on its way in: in its start-up delay (`waiting`) or being added. */
interface Start {
  phase: "waiting" | "adding";
  /** Scale-down chose it while it was being added: it drains as soon as it exists. */
  cancelled: boolean;
  readonly abort: AbortController;
}

interface Pool {
  readonly starting: Start[];
  /** Ids in the order they became ready; scale-down drains the newest first. */
  readonly ready: string[];
  readonly draining: Map<string, Promise<void>>;
}

/** The workers of one pool, as the connector holds them now. */
export interface VirtualPoolView {
  readonly starting: number;
  readonly ready: readonly string[];
  readonly draining: readonly string[];
}

/**
 * A connector for replay in virtual time: a scale-up adds each worker after `startupDelayMs` on the
 * clock; a scale-down first cancels workers still starting (newest first), then drains ready ones
 * (newest first), removing each only after its in-flight requests finish. No I/O and no timers but
 * the clock's, so a replay is deterministic.
 */
export class VirtualConnector implements ScalingConnector {
  readonly #o: Required<Omit<VirtualConnectorOptions, "initialWorkers">>;
  readonly #pools = new Map<WorkerRole, Pool>();
  readonly #tasks = new Set<Promise<void>>();
  #closed = false;

  /** Needs no I/O, so it can be made directly; `create` is the same, for code that treats bindings alike. */
  constructor(options: VirtualConnectorOptions) {
    this.#o = {
      clock: options.clock,
      workers: options.workers,
      roles: options.roles ?? SCALING_ROLES,
      startupDelayMs: options.startupDelayMs ?? 30_000,
      onError: options.onError ?? (() => {}),
    };
    for (const role of this.#o.roles) {
      this.#pools.set(role, { starting: [], ready: [...(options.initialWorkers?.[role] ?? [])], draining: new Map() });
    }
  }

  /** A connector over the simulation's workers; starts nothing. */
  static async create(options: VirtualConnectorOptions): Promise<VirtualConnector> {
    return new VirtualConnector(options);
  }

  async replicas(role: WorkerRole): Promise<ReplicaCount> {
    const pool = this.#pool(role);
    return { desired: pool.starting.filter((s) => !s.cancelled).length + pool.ready.length, ready: pool.ready.length };
  }

  async scale(role: WorkerRole, count: number): Promise<void> {
    if (this.#closed) throw connectorClosed("virtual");
    const pool = this.#pool(role);
    checkReplicaCount(role, count);
    let current = (await this.replicas(role)).desired;
    for (; current < count; current++) this.#start(role, pool);
    for (; current > count; current--) this.#removeOne(role, pool);
  }

  /** The pool's workers by phase. */
  view(role: WorkerRole): VirtualPoolView {
    const pool = this.#pool(role);
    return {
      starting: pool.starting.filter((s) => !s.cancelled).length,
      ready: [...pool.ready],
      draining: [...pool.draining.keys()],
    };
  }

  /**
   * Cancels the starts still in their delay and waits for the adds and drains under way: a drain
   * ends when the simulation's in-flight requests on that worker do, so keep the clock running.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const pool of this.#pools.values()) for (const start of pool.starting) start.abort.abort();
    }
    while (this.#tasks.size > 0) await Promise.all(this.#tasks);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #pool(role: WorkerRole): Pool {
    const pool = this.#pools.get(role);
    if (!pool) throw roleNotConfigured("virtual", role, "roles");
    return pool;
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    void task.finally(() => this.#tasks.delete(task));
  }

  #start(role: WorkerRole, pool: Pool): void {
    const start: Start = { phase: "waiting", cancelled: false, abort: new AbortController() };
    pool.starting.push(start);
    const leave = (): void => {
      pool.starting.splice(pool.starting.indexOf(start), 1);
    };
    this.#track(
      (async () => {
        try {
          await this.#o.clock.sleep(this.#o.startupDelayMs, start.abort.signal);
        } catch {
          return leave();
        }
        start.phase = "adding";
        let id: string;
        try {
          id = await this.#o.workers.addWorker(role);
        } catch (error) {
          this.#o.onError(error, role);
          return leave();
        }
        leave();
        pool.ready.push(id);
        if (start.cancelled) this.#drain(role, pool, pool.ready.pop() as string);
      })(),
    );
  }

  /** One worker fewer: the newest still waiting to start, else the newest ready, else the newest being added. */
  #removeOne(role: WorkerRole, pool: Pool): void {
    const live = pool.starting.filter((s) => !s.cancelled);
    const waiting = live.filter((s) => s.phase === "waiting").at(-1);
    if (waiting) {
      waiting.cancelled = true;
      waiting.abort.abort();
      return;
    }
    const newest = pool.ready.pop();
    if (newest !== undefined) {
      this.#drain(role, pool, newest);
      return;
    }
    const adding = live.at(-1);
    if (adding) adding.cancelled = true;
  }

  #drain(role: WorkerRole, pool: Pool, id: string): void {
    const { workers, onError } = this.#o;
    const task = (async () => {
      try {
        await workers.drainWorker(role, id);
        await workers.removeWorker(role, id);
      } catch (error) {
        onError(error, role);
      } finally {
        pool.draining.delete(id);
      }
    })();
    pool.draining.set(id, task);
    this.#track(task);
  }
}
