import type { Tracing } from "../observability/index.js";
import type { WorkerRole } from "../protocol/index.js";
import type { WorkerHost } from "../worker/index.js";

/** The workers started, and how to start more of them (the planner's in-process connector). */
export interface StartedWorkers {
  readonly workers: WorkerHost[];
  /** The first model's name (the one a planner's `addWorker` starts workers of). */
  readonly modelName: string;
  /** Every model served, in the order of `--model`. */
  readonly modelNames: readonly string[];
  /** The workers' spans (`--otlp-endpoint`); close it after the workers, so their last spans go out. */
  readonly tracing: Tracing;
  /**
   * Starts one more worker of `role` of `model` (default: the first) with the same flags (the next
   * index: its own disk tier folder).
   */
  addWorker(role: WorkerRole, model?: string): Promise<WorkerHost>;
}
