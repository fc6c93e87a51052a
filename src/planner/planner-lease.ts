import type { Logger } from "../observability/index.js";
import type { Clock, Discovery, Lease } from "../runtime/index.js";

/** The claim one acting planner of a deployment holds in its discovery store. */
export const PLANNER_CLAIM = "planner";

export interface PlannerLeaseOptions {
  readonly discovery: Discovery;
  readonly clock: Clock;
  /** This planner, as the claim names it (its host and process). */
  readonly holder: string;
  /** How long the claim outlives its holder: a standby takes over within this of a SIGKILL. Default 5 s. */
  readonly ttlMs?: number;
  /** Told when this planner starts and stops acting. */
  readonly onChange?: (acting: boolean) => void | Promise<void>;
  readonly logger: Logger;
}

/**
 * Makes one planner of a deployment act at a time: it holds the deployment's `planner` claim in
 * discovery (etcd) and renews it every third of its TTL; the others stand by and try for it as
 * often, so when the acting one dies (even by SIGKILL) another takes over once its lease lapses.
 * A planner whose renewal fails stops acting at once.
 */
export class PlannerLease {
  readonly #o: PlannerLeaseOptions;
  readonly #ttlMs: number;
  readonly #stop = new AbortController();
  #tookOver = false;
  #lease: Lease | undefined;
  #loop: Promise<void> | undefined;

  constructor(options: PlannerLeaseOptions) {
    this.#o = options;
    this.#ttlMs = options.ttlMs ?? 5000;
  }

  /** Whether this planner holds the claim now and is done taking over (`onChange(true)` settled: its workers adopted). */
  get acting(): boolean {
    return this.#lease !== undefined && this.#tookOver;
  }

  /** Tries for the claim once now (so a lone planner acts from its start), then keeps at it. */
  async start(): Promise<void> {
    await this.#tick();
    this.#loop = this.#run();
  }

  /** Who acts now, as discovery says. */
  holder(): Promise<string | undefined> {
    return this.#o.discovery.holder(PLANNER_CLAIM);
  }

  /** Stops trying, and gives the claim up so a standby takes over at once. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    const lease = this.#lease;
    this.#lease = undefined;
    await lease?.revoke().catch(() => {});
  }

  async #run(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      try {
        await this.#o.clock.sleep(this.#ttlMs / 3, this.#stop.signal);
      } catch {
        return;
      }
      await this.#tick();
    }
  }

  async #tick(): Promise<void> {
    try {
      if (this.#lease) {
        if (await this.#lease.keepAlive()) return;
        this.#lease = undefined;
        this.#o.logger.warn({ holder: this.#o.holder }, "this planner lost its claim: it stops acting");
        await this.#o.onChange?.(false);
        return;
      }
      const lease = await this.#o.discovery.claim(PLANNER_CLAIM, this.#o.holder, { ttlMs: this.#ttlMs });
      if (!lease) return;
      this.#lease = lease;
      this.#tookOver = false;
      this.#o.logger.info({ holder: this.#o.holder }, "this planner holds the claim: it acts");
      await this.#o.onChange?.(true);
      // Only now does it act (and say so): before, its view would show no workers it is adopting.
      this.#tookOver = true;
    } catch (error) {
      // etcd unreachable: a holder cannot know it still holds the claim, so it stops acting.
      if (this.#lease) {
        this.#lease = undefined;
        await this.#o.onChange?.(false);
      }
      this.#o.logger.warn({ err: (error as Error).message }, "the planner's claim could not be checked");
    }
  }
}
