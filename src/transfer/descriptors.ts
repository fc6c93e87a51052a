import type { BackendName } from "../protocol/index.js";

export type { AgentMetadata, BackendName, Medium, TransferDescriptor } from "../protocol/index.js";
export { backendNames } from "../protocol/index.js";

export type TransferOp = "read" | "write";

/** How a transfer ended. */
export interface TransferResult {
  readonly backend: BackendName;
  readonly bytes: number;
  readonly seconds: number;
  /** Attempts made; more than one after a checksum mismatch was retried. */
  readonly attempts: number;
}
