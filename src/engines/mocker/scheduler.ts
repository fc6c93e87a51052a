import type { Clock } from "../../runtime/index.js";
import type { BlockManager } from "./block-manager.js";
import { LOWER_TIERS, type TierCounts } from "./lower-tiers.js";
import type { MockSequence } from "./mock-sequence.js";
import type { TimingModel } from "./timing-model.js";

export interface SchedulerOptions {
  readonly clock: Clock;
  readonly blocks: BlockManager;
  readonly timing: TimingModel;
  /** Milliseconds to copy KV blocks from the lower tiers to the device (blocks per tier). Default: free. */
  readonly onboardMs?: (blocks: TierCounts) => number;
  readonly maxBatchedTokens: number;
  readonly maxSequences: number;
  /**
   * `fcfs` (the default): the waiting queue in arrival order, the newest running sequence preempted.
   * `priority` (vLLM's `--scheduling-policy priority`): the waiting queue by (priority, arrival), and
   * the running sequence latest by (priority, arrival) preempted.
   */
  readonly policy?: SchedulingPolicy;
  /** Called after each step for every sequence that got a new token or ended. */
  readonly onProgress: (sequence: MockSequence, event: "token" | "finished" | "failed") => void;
  /** Picks the next token of a sequence (deterministic text). */
  readonly nextToken: (sequence: MockSequence) => number;
}

/** How an engine orders what waits and what it preempts (vLLM's `--scheduling-policy`). */
export const SCHEDULING_POLICIES = ["fcfs", "priority"] as const;
export type SchedulingPolicy = (typeof SCHEDULING_POLICIES)[number];

/**
 * vLLM-v1-like continuous batching: each step spends a token budget on one decode token per
 * running sequence first, then on prefill chunks (running sequences first, then the waiting queue
 * in arrival order, or by priority). Under KV pressure the newest (or least urgent) running sequence
 * is preempted and recomputed later. A step lasts what the timing model says, on the given clock.
 */
export class MockScheduler {
  readonly #o: SchedulerOptions;
  readonly #waiting: MockSequence[] = [];
  readonly #running: MockSequence[] = [];
  #wake: (() => void) | undefined;
  #stopped = false;
  #arrivals = 0;
  #loop: Promise<void> | undefined;

  constructor(options: SchedulerOptions) {
    this.#o = options;
  }

  get waitingCount(): number {
    return this.#waiting.length;
  }

  get runningCount(): number {
    return this.#running.length;
  }

  enqueue(sequence: MockSequence): void {
    sequence.arrival = this.#arrivals++;
    this.#wait(sequence);
    this.#loop ??= this.#run();
    this.#wake?.();
  }

  /** Wakes the loop so a cancelled sequence is dropped at the next step boundary. */
  poke(): void {
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      this.#dropCancelled();
      if (this.#waiting.length === 0 && this.#running.length === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
        continue;
      }
      if (!(await this.#step())) {
        // Nothing could run (every sequence is waiting for blocks): wait for an arrival or a cancel.
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
        this.#wake = undefined;
      }
    }
    for (const s of [...this.#running, ...this.#waiting]) {
      s.releaseBlocks(this.#o.blocks);
      this.#o.onProgress(s, "failed");
    }
  }

  /** Runs one engine step; false when no sequence could make progress. */
  async #step(): Promise<boolean> {
    const { blocks, timing } = this.#o;
    let budget = this.#o.maxBatchedTokens;
    let prefillTokens = 0;
    let decodeCount = 0;
    const stepped = new Set<MockSequence>();
    let admittedImported = 0;
    // Decode first: one token for every sequence that is past its prefill.
    for (const s of [...this.#running]) {
      if (s.remaining !== 1 || s.generated === 0 || budget === 0) continue;
      let computed = s.compute(1, blocks) === 1;
      while (!computed && this.#preemptFor(s)) computed = s.compute(1, blocks) === 1;
      if (computed) {
        budget--;
        decodeCount++;
        stepped.add(s);
      }
    }
    // Then prefill chunks (and recomputation after preemption): running sequences, then
    // admissions in arrival order.
    for (const s of [...this.#running]) {
      if (budget === 0) break;
      if (stepped.has(s) || !this.#running.includes(s)) continue;
      let done = s.compute(Math.min(s.remaining, budget), blocks);
      while (done === 0 && this.#preemptFor(s)) done = s.compute(Math.min(s.remaining, budget), blocks);
      if (done === 0 && this.#running.length === 1) {
        // Alone and still out of blocks: the request does not fit in the cache.
        this.#remove(s);
        this.#o.onProgress(s, "failed");
        continue;
      }
      budget -= done;
      prefillTokens += done;
      if (s.remaining === 0) stepped.add(s);
    }
    while (budget > 0 && this.#waiting.length > 0 && this.#running.length < this.#o.maxSequences) {
      const s = this.#waiting[0] as MockSequence;
      const cached = s.adoptCachedPrefix(blocks);
      if (!s.admitted) {
        s.cachedTokens = Math.min(cached, s.promptLength);
        attributeTiers(s);
      }
      if (s.importedFirstToken !== undefined && s.generated === 0) {
        if (!this.#admitImported(s)) break;
        admittedImported++;
        continue;
      }
      const done = s.compute(Math.min(s.remaining, budget), blocks);
      if (done === 0 && s.remaining > 0) {
        s.releaseBlocks(blocks);
        if (this.#running.length === 0) {
          // Nothing will ever free a block for it: the request does not fit in the cache.
          this.#waiting.shift();
          this.#o.onProgress(s, "failed");
        }
        break;
      }
      this.#waiting.shift();
      this.#running.push(s);
      s.admitted = true;
      budget -= done;
      prefillTokens += done;
      if (s.remaining === 0) stepped.add(s);
    }
    // Copies from lower tiers hold the step up (modelled as synchronous loads, as LMCache does).
    const onboardMs = this.#o.onboardMs?.(blocks.takeOnboarded()) ?? 0;
    // Imported admissions cost no modelled time; the next step decodes them.
    if (stepped.size === 0 && prefillTokens === 0) {
      if (onboardMs > 0) await this.#o.clock.sleep(onboardMs);
      return admittedImported > 0 || onboardMs > 0;
    }
    const kvUsage = blocks.activeBlocks / blocks.capacity;
    const stepMs = onboardMs + timing.prefillMs(prefillTokens) + (decodeCount > 0 ? timing.decodeMs(kvUsage) : 0);
    await this.#o.clock.sleep(stepMs);
    for (const s of stepped) {
      if (s.cancelled) continue;
      s.output.push(this.#o.nextToken(s));
      s.generated++;
      if (s.generated >= s.maxTokens) this.#finish(s);
      else this.#o.onProgress(s, "token");
    }
    return true;
  }

  /**
   * Admits a sequence whose prompt KV arrived from a prefill worker: it takes blocks for the prompt
   * without modelled compute and has its first token at once. False when the blocks are not there.
   */
  #admitImported(s: MockSequence): boolean {
    const { blocks } = this.#o;
    const need = s.remaining;
    if (s.compute(need, blocks) < need) {
      s.releaseBlocks(blocks);
      if (this.#running.length === 0) {
        this.#waiting.shift();
        this.#o.onProgress(s, "failed");
      }
      return false;
    }
    this.#waiting.shift();
    this.#running.push(s);
    s.admitted = true;
    s.output.push(s.importedFirstToken as number);
    s.generated++;
    if (s.generated >= s.maxTokens) this.#finish(s);
    else this.#o.onProgress(s, "token");
    return true;
  }

  #finish(s: MockSequence): void {
    this.#remove(s);
    this.#o.onProgress(s, "token");
    this.#o.onProgress(s, "finished");
  }

  /** Puts a sequence in the waiting queue: at the end (fcfs) or at its place by (priority, arrival). */
  #wait(sequence: MockSequence): void {
    if (this.#o.policy !== "priority") {
      this.#waiting.push(sequence);
      return;
    }
    let at = this.#waiting.length;
    while (at > 0 && later(this.#waiting[at - 1] as MockSequence, sequence)) at--;
    this.#waiting.splice(at, 0, sequence);
  }

  /**
   * Frees a running sequence's blocks for `needing`: the newest (fcfs) or the one latest by
   * (priority, arrival), back to the waiting queue to be recomputed. False when that is `needing`
   * itself (it waits for blocks in place).
   */
  #preemptFor(needing: MockSequence): boolean {
    const priority = this.#o.policy === "priority";
    const victim = priority
      ? this.#running.reduce<MockSequence | undefined>(
          (worst, s) => (worst === undefined || later(s, worst) ? s : worst),
          undefined,
        )
      : this.#running.at(-1);
    if (victim === undefined || victim === needing) return false;
    this.#running.splice(this.#running.indexOf(victim), 1);
    victim.releaseBlocks(this.#o.blocks);
    if (priority) this.#wait(victim);
    else this.#waiting.unshift(victim);
    return true;
  }

  #dropCancelled(): void {
    for (const list of [this.#waiting, this.#running]) {
      for (const s of list.filter((x) => x.cancelled)) {
        this.#remove(s);
        this.#o.onProgress(s, "finished");
      }
    }
  }

  #remove(s: MockSequence): void {
    s.releaseBlocks(this.#o.blocks);
    for (const list of [this.#waiting, this.#running]) {
      const at = list.indexOf(s);
      if (at >= 0) list.splice(at, 1);
    }
  }
}

/** Whether `a` runs after `b` under the priority policy: a larger priority, or the same and a later arrival. */
function later(a: MockSequence, b: MockSequence): boolean {
  return a.priority !== b.priority ? a.priority > b.priority : a.arrival > b.arrival;
}

/**
 * Which tiers a sequence's cached prompt tokens came from. An admission that failed after
 * onboarding finds those blocks on the device next time, so each tier keeps the most it ever
 * served; clamped, fastest tier first, so the tiers never add up past `cachedTokens`.
 */
function attributeTiers(s: MockSequence): void {
  let left = s.cachedTokens;
  const next: TierCounts = { host: 0, disk: 0, object: 0 };
  for (const tier of LOWER_TIERS) {
    next[tier] = Math.min(Math.max(s.tierCachedTokens[tier], s.onboardedTokens[tier]), left);
    left -= next[tier];
  }
  s.tierCachedTokens = next;
}
