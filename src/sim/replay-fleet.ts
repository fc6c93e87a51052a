import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EngineLoad, MockerEngine, type MockerEngineOptions } from "../engines/index.js";
import { silentLogger } from "../observability/index.js";
import { ArmatureError, type WorkerRole } from "../protocol/index.js";
import type { Runtime, VirtualClock } from "../runtime/index.js";
import { backendNames, type CostModel } from "../transfer/index.js";
import { WorkerHost } from "../worker/index.js";

/**
 * The workers of a replay, for whatever scales them while it runs (a planner's virtual connector):
 * add a worker, drain one, take it out. Every change happens on the replay's clock, so a replay
 * that scales stays deterministic. Shaped like the planner's `SimulatedWorkers`.
 */
export interface ReplayFleet {
  /**
   * Starts a mocker worker of `role` after `startupMs` (default the replay's `workerStartupMs`) on
   * the clock; resolves with its id once it is registered and takes requests. Rejects with
   * `WORKER_UNAVAILABLE` when the replay ends first.
   */
  addWorker(role: WorkerRole, options?: { readonly startupMs?: number }): Promise<string>;
  /**
   * Stops routing new requests to the worker (it leaves discovery at once) and resolves once the
   * requests it holds are finished. Rejects with `ROUTER_WORKER_NOT_FOUND` for an id this fleet
   * does not hold in `role`.
   */
  drainWorker(role: WorkerRole, id: string): Promise<void>;
  /**
   * Takes the worker out of the replay, draining it first if it was not; without `id`, the newest
   * worker of `role` that takes requests. Resolves once it stopped; nothing when there is none.
   */
  removeWorker(role: WorkerRole, id?: string): Promise<void>;
  /** Ids of the workers of `role` that take requests now, oldest first. */
  workers(role: WorkerRole): readonly string[];
  /** A worker's engine load now (requests running and waiting, KV blocks in use), while it is in the fleet. */
  load(id: string): EngineLoad | undefined;
}

export interface MockerFleetOptions {
  readonly runtime: Runtime;
  readonly clock: VirtualClock;
  /** Every worker's engine is made with these (an object tier in them is shared). */
  readonly engine: Omit<MockerEngineOptions, "clock">;
  /** The link a disaggregated handoff crosses, whatever backend would carry it in one process. */
  readonly transfer: CostModel;
  /** Default start-up delay of `addWorker`. */
  readonly workerStartupMs: number;
  /** How long a drain waits for in-flight requests before the worker is closed anyway. */
  readonly drainGraceMs: number;
  /** Hears every engine made, before its worker registers. */
  readonly onEngine?: ((engine: MockerEngine) => void) | undefined;
}

interface Member {
  readonly role: WorkerRole;
  readonly host: WorkerHost;
  draining: boolean;
}

let fleets = 0;

/** Mocker engines in real `WorkerHost`s on a replay's runtime. */
export class MockerFleet implements ReplayFleet {
  readonly #o: MockerFleetOptions;
  readonly #members = new Map<string, Member>();
  readonly #counts = new Map<WorkerRole, number>();
  readonly #stop = new AbortController();
  /** Transfer agents are named per process: two replays in one process must not share names. */
  readonly #agentPrefix = `replay${++fleets}`;
  /** The workers' shared folders, apart from /dev/shm (nothing is written there: handoffs are modelled). */
  readonly #sharedRoot = mkdtempSync(join(tmpdir(), "armature-replay-"));

  constructor(options: MockerFleetOptions) {
    this.#o = options;
  }

  async addWorker(role: WorkerRole, options: { readonly startupMs?: number } = {}): Promise<string> {
    const n = this.#counts.get(role) ?? 0;
    this.#counts.set(role, n + 1);
    const id = `${role}-${String(n).padStart(4, "0")}`;
    const startupMs = options.startupMs ?? this.#o.workerStartupMs;
    if (startupMs > 0) await this.#o.clock.sleep(startupMs, this.#stop.signal).catch(() => undefined);
    if (this.#stop.signal.aborted) throw new ArmatureError("WORKER_UNAVAILABLE", `the replay ended before worker ${id} started`);
    const { clock, runtime, transfer } = this.#o;
    const engine = new MockerEngine({ ...this.#o.engine, clock });
    this.#o.onEngine?.(engine);
    const costModels = Object.fromEntries(backendNames.map((backend) => [backend, transfer]));
    const name = `${this.#agentPrefix}-${id}`;
    // Starting opens a transfer listener (real I/O): time waits for it, as for an instant.
    const host = await clock.hold(
      WorkerHost.create({
        runtime,
        engine,
        modelName: "replay",
        role,
        id,
        logger: silentLogger,
        transfer: { name, sharedDir: join(this.#sharedRoot, `armature-${name}`), costModels },
        modelledKvExports: true,
      }),
    );
    this.#members.set(id, { role, host, draining: false });
    return id;
  }

  async drainWorker(role: WorkerRole, id: string): Promise<void> {
    const member = this.#member(role, id);
    member.draining = true;
    await member.host.drain(this.#o.drainGraceMs);
  }

  async removeWorker(role: WorkerRole, id?: string): Promise<void> {
    const chosen = id ?? this.workers(role).at(-1);
    if (chosen === undefined) return;
    const member = this.#member(role, chosen);
    await this.drainWorker(role, chosen);
    this.#members.delete(chosen);
    const load = member.host.engine.load();
    const closing = member.host.close(0);
    // An idle worker's close is real I/O only (its transfer listener): time waits for it.
    await (load.activeRequests + load.waitingRequests === 0 ? this.#o.clock.hold(closing) : closing);
  }

  workers(role: WorkerRole): readonly string[] {
    return [...this.#members].filter(([, m]) => m.role === role && !m.draining).map(([id]) => id);
  }

  load(id: string): EngineLoad | undefined {
    return this.#members.get(id)?.host.engine.load();
  }

  /** Stops pending starts and closes every worker (draining for up to `graceMs`); keep the clock running. */
  async close(graceMs = 0): Promise<void> {
    this.#stop.abort();
    const members = [...this.#members.values()];
    this.#members.clear();
    await Promise.all(members.map((m) => m.host.close(graceMs)));
    rmSync(this.#sharedRoot, { recursive: true, force: true });
  }

  #member(role: WorkerRole, id: string): Member {
    const member = this.#members.get(id);
    if (!member || member.role !== role) {
      throw new ArmatureError(
        "ROUTER_WORKER_NOT_FOUND",
        `the replay has no ${role} worker ${id}; fleet.workers("${role}") lists them`,
      );
    }
    return member;
  }
}
