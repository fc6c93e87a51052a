import type { AgentMetadata, ModelCard, WorkerLoad } from "../protocol/index.js";

/** What a routing policy sees of one worker. */
export interface WorkerView {
  readonly id: string;
  readonly card: ModelCard;
  /** Requests this router has sent to the worker that have not ended. */
  readonly inflight: number;
  /** Last load the worker published, if any. */
  readonly published: WorkerLoad | undefined;
  /** The worker's transfer agent (address, measured cost models), when it registered one. */
  readonly transferAgent?: AgentMetadata | undefined;
}

/** Per-request changes to the KV router's settings (Dynamo's `RouterConfigOverride`). */
export interface RouterOverrides {
  readonly overlapWeight?: number | undefined;
  readonly temperature?: number | undefined;
}

/** What a policy may look at to choose: the prompt tokens (the KV router hashes them). */
export interface RouteRequest {
  readonly model: string;
  /** The LoRA adapter the request runs with: its blocks hash with the adapter's seed. */
  readonly lora?: string | undefined;
  readonly tokenIds: readonly number[];
  readonly overrides?: RouterOverrides | undefined;
}
