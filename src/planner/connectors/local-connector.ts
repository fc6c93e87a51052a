import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import type { Logger } from "../../observability/index.js";
import type { WorkerRole } from "../../protocol/index.js";
import type { InstanceRecord } from "../../runtime/index.js";
import { AdoptedWorker, isRunning } from "./adopted-worker.js";
import { LocalWorker, type LocalWorkerExit, type LocalWorkerInfo } from "./local-worker.js";
import {
  checkReplicaCount,
  connectorClosed,
  type ReplicaCount,
  roleNotConfigured,
  type ScalingConnector,
} from "./scaling-connector.js";

const BIN = fileURLToPath(new URL("../../../bin/armature.js", import.meta.url));

export interface LocalConnectorOptions {
  /**
   * The flags of `armature worker` for each role's workers, e.g.
   * `{ decode: ["--engine", "mocker", "--role", "decode"] }`. A role without flags is not scaled.
   */
  readonly workerArgs: Partial<Record<WorkerRole, readonly string[]>>;
  /** The workers' environment (`ARMATURE_BUS`, `ARMATURE_DISCOVERY` keep URLs out of `ps`). Default this process's. */
  readonly env?: NodeJS.ProcessEnv;
  /** The program and arguments that run a worker, before `workerArgs`. Default `node bin/armature.js worker`. */
  readonly command?: readonly [string, ...string[]];
  /** Every line a worker prints, stdout and stderr. Default: dropped. */
  readonly onLine?: (line: string, worker: LocalWorkerInfo) => void;
  /** Every worker's exit: asked to stop or not, killed at the deadline or not. */
  readonly onExit?: (exit: LocalWorkerExit) => void;
  /** How long a stopped worker may drain before SIGKILL. Default 60 s (the worker itself gives up at 45 s). */
  readonly stopTimeoutMs?: number;
  /** Warnings: a worker that exits by itself, one killed at the deadline. */
  readonly logger?: Logger;
}

/** A worker of a pool: a child this connector started, or one it adopted from a planner before it. */
type PoolWorker = LocalWorker | AdoptedWorker;

interface Pool {
  target: number;
  /** Workers starting or ready, oldest first; scale-down stops the newest. */
  readonly workers: PoolWorker[];
}

/**
 * Scales pools of `armature worker` child processes on this machine. Scale-up spawns workers; a
 * worker counts as ready once it prints its ready line, which it does after registering in
 * discovery. Scale-down takes the newest worker out of the pool and sends it SIGTERM: it stops
 * taking requests, finishes those in flight, deregisters and exits 0; past `stopTimeoutMs` it is
 * killed with SIGKILL, which `onExit` and the logger report. A worker that exits by itself is
 * reported and not restarted: `ready` falls below `desired` until the next `scale`.
 */
export class LocalConnector implements ScalingConnector {
  readonly #o: LocalConnectorOptions & { command: readonly [string, ...string[]]; stopTimeoutMs: number };
  readonly #pools = new Map<WorkerRole, Pool>();
  readonly #draining = new Set<PoolWorker>();
  readonly #stopping = new Set<Promise<LocalWorkerExit>>();
  readonly #onProcessExit = (): void => this.#killAll();
  #serial = 0;
  #closed = false;

  private constructor(options: LocalConnectorOptions) {
    this.#o = {
      ...options,
      command: options.command ?? [process.execPath, BIN, "worker"],
      stopTimeoutMs: options.stopTimeoutMs ?? 60_000,
    };
    for (const role of Object.keys(options.workerArgs) as WorkerRole[]) this.#pools.set(role, { target: 0, workers: [] });
    // If the owner dies without close(), its workers (own process groups) must not outlive it.
    process.on("exit", this.#onProcessExit);
  }

  /** A connector with empty pools; `scale` starts workers. */
  static async create(options: LocalConnectorOptions): Promise<LocalConnector> {
    return new LocalConnector(options);
  }

  async replicas(role: WorkerRole): Promise<ReplicaCount> {
    const pool = this.#pool(role);
    return { desired: pool.target, ready: pool.workers.filter((w) => w.state === "ready").length };
  }

  /** Spawns or stops workers so that `count` are starting or running; does not wait for either. */
  async scale(role: WorkerRole, count: number): Promise<void> {
    if (this.#closed) throw connectorClosed("local");
    const pool = this.#pool(role);
    checkReplicaCount(role, count);
    pool.target = count;
    while (pool.workers.length < count) pool.workers.push(this.#spawn(role, pool));
    while (pool.workers.length > count) this.#stop(pool.workers.pop() as PoolWorker);
  }

  /**
   * Adopts the workers another planner's local connector started on this machine and left running
   * (it was killed): the processes of `instances` registered with `startedBy` on this host, alive,
   * of a role this connector scales and not already in a pool. Each joins its pool (its target
   * grows by one) and is stopped like a child. Returns how many processes were adopted.
   */
  adopt(instances: readonly InstanceRecord[]): number {
    if (this.#closed) throw connectorClosed("local");
    const here = hostname();
    const known = new Set<number>();
    for (const pool of this.#pools.values()) for (const w of pool.workers) if (w.pid !== undefined) known.add(w.pid);
    for (const w of this.#draining) if (w.pid !== undefined) known.add(w.pid);
    const byPid = new Map<number, InstanceRecord[]>();
    for (const instance of instances) {
      const origin = instance.startedBy;
      if (!origin || origin.host !== here || origin.pid === process.pid || known.has(origin.pid)) continue;
      if (!this.#pools.has(instance.role) || !isRunning(origin.pid)) continue;
      byPid.set(origin.pid, [...(byPid.get(origin.pid) ?? []), instance]);
    }
    for (const [pid, records] of byPid) {
      const role = (records[0] as InstanceRecord).role;
      const pool = this.#pool(role);
      const worker = new AdoptedWorker({ name: `${role}-${++this.#serial}`, role, pid, instanceIds: records.map((r) => r.id) });
      this.#watchExit(worker, pool);
      pool.workers.push(worker);
      pool.target += 1;
      this.#o.logger?.info(
        { worker: worker.name, pid, instances: worker.instanceIds },
        "adopted a worker a previous planner started",
      );
    }
    return byPid.size;
  }

  /** The pool's workers, draining ones included. */
  workers(role: WorkerRole): LocalWorkerInfo[] {
    const pool = this.#pool(role);
    const draining = [...this.#draining].filter((w) => w.role === role);
    return [...pool.workers, ...draining].map((w) => ({
      name: w.name,
      role: w.role,
      pid: w.pid,
      state: w.state,
      instanceIds: w.instanceIds,
    }));
  }

  /** Resolves once every worker told to stop so far has exited. */
  async drained(): Promise<LocalWorkerExit[]> {
    return Promise.all(this.#stopping);
  }

  /** Stops every worker (each drains, up to `stopTimeoutMs`) and waits for them all to exit. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const pool of this.#pools.values()) {
        pool.target = 0;
        for (const worker of pool.workers.splice(0)) this.#stop(worker);
      }
    }
    await this.drained();
    process.off("exit", this.#onProcessExit);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #pool(role: WorkerRole): Pool {
    const pool = this.#pools.get(role);
    if (!pool) throw roleNotConfigured("local", role, "workerArgs");
    return pool;
  }

  #spawn(role: WorkerRole, pool: Pool): LocalWorker {
    const [command, ...prefix] = this.#o.command;
    const worker = new LocalWorker({
      name: `${role}-${++this.#serial}`,
      role,
      command,
      args: [...prefix, ...(this.#o.workerArgs[role] ?? [])],
      env: this.#o.env ?? process.env,
      onLine: this.#o.onLine ?? (() => {}),
    });
    this.#watchExit(worker, pool);
    return worker;
  }

  #watchExit(worker: PoolWorker, pool: Pool): void {
    void worker.exited.then((exit) => {
      // Told to stop: #stop reports it. Otherwise it exited by itself: out of the pool, reported, not restarted.
      if (exit.requested) return;
      const at = pool.workers.indexOf(worker);
      if (at >= 0) pool.workers.splice(at, 1);
      this.#o.logger?.warn({ worker: exit.name, code: exit.code, signal: exit.signal }, "worker exited without being stopped");
      this.#o.onExit?.(exit);
    });
  }

  #stop(worker: PoolWorker): void {
    this.#draining.add(worker);
    const stopping = worker.stop(this.#o.stopTimeoutMs).then((exit) => {
      this.#draining.delete(worker);
      this.#stopping.delete(stopping);
      if (exit.killed) {
        this.#o.logger?.warn(
          { worker: exit.name, deadlineMs: this.#o.stopTimeoutMs },
          "worker did not finish draining in time; killed",
        );
      }
      if (exit.requested) this.#o.onExit?.(exit);
      return exit;
    });
    this.#stopping.add(stopping);
  }

  #killAll(): void {
    for (const pool of this.#pools.values()) for (const worker of pool.workers) worker.killNow();
    for (const worker of this.#draining) worker.killNow();
  }
}
