/**
 * Where a region's bytes live: process memory, a file (in /dev/shm it is shared memory), or an
 * object (a key in an object store).
 */
export type Medium = "memory" | "file" | "object";

/** The mechanisms that move bytes; an agent picks one per transfer from where both sides are. */
export type BackendName = "memory" | "file" | "object" | "shm" | "tcp";

export const backendNames: readonly BackendName[] = ["memory", "file", "object", "shm", "tcp"];

/**
 * Names a byte range of a region registered with an agent, wherever it is. The owner makes
 * descriptors (`agent.describe`) and hands them to peers, which use them as they are.
 */
export interface TransferDescriptor {
  readonly agent: string;
  readonly region: string;
  readonly offset: number;
  readonly length: number;
  readonly medium: Medium;
  /** File regions only: the path on the owner's host (peers on the same host open it directly). */
  readonly path?: string | undefined;
}

/** What a peer needs to reach an agent; published through discovery. */
export interface AgentMetadata {
  readonly name: string;
  /** Equal on two agents when they share a host (and its /dev/shm). */
  readonly hostId: string;
  /** The agent's TCP listener, for peers on other hosts and for notifications. */
  readonly address: { readonly host: string; readonly port: number };
  /** `T = alphaMs + bytes / bytesPerMs` per backend, as the agent measured or was configured. */
  readonly costModels?: Readonly<Partial<Record<BackendName, { readonly alphaMs: number; readonly bytesPerMs: number }>>>;
}
