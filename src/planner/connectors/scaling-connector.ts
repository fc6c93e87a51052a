import { ArmatureError, type WorkerRole } from "../../protocol/index.js";

/** The roles a connector scales, each its own pool of workers. */
export const SCALING_ROLES: readonly WorkerRole[] = ["aggregated", "prefill", "decode"];

/** A pool's size as a connector sees it. */
export interface ReplicaCount {
  /** Workers the pool is set to have: those running and those starting, not those draining. */
  readonly desired: number;
  /** Workers that take requests now. Starting and draining workers are not counted. */
  readonly ready: number;
}

/**
 * Applies the planner's decisions: the number of workers of each role. One port, three bindings
 * (`VirtualConnector` for replay, `LocalConnector` for child processes, `KubernetesConnector` for
 * Deployments), all passing `scalingConnectorContract`.
 *
 * Scale-down drains: a removed worker stops taking new requests, finishes the ones it has, then
 * exits. No in-flight request fails because the planner shrank a pool.
 */
export interface ScalingConnector {
  /** The pool's desired and ready counts. Rejects with `CONFIG_INVALID` for a role the connector was not given. */
  replicas(role: WorkerRole): Promise<ReplicaCount>;
  /**
   * Sets the pool to `count` workers and resolves once the change is under way: `desired` reads
   * `count` from then on, while `ready` follows as new workers start and removed ones drain. Rejects
   * with `CONFIG_INVALID` for a count that is not a whole number ≥ 0 (nothing changes then), and
   * with `WORKER_UNAVAILABLE` once the connector is closed.
   */
  scale(role: WorkerRole, count: number): Promise<void>;
  /** Stops acting: what is under way finishes as each binding documents; idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Refuses a count that is not a whole number from 0 to 2³¹ − 1 (Kubernetes' int32 replicas). */
export function checkReplicaCount(role: WorkerRole, count: number): void {
  if (!Number.isInteger(count) || count < 0 || count > 2_147_483_647) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `the ${role} pool cannot be scaled to ${count}: give a whole number of workers, 0 or more`,
    );
  }
}

/** The error every binding gives for a call after `close()`. */
export function connectorClosed(name: string): ArmatureError {
  return new ArmatureError("WORKER_UNAVAILABLE", `the ${name} connector is closed; create a new one to scale again`);
}

/** The error every binding gives for a role it was not set up for, naming the option that sets it. */
export function roleNotConfigured(name: string, role: WorkerRole, option: string): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `the ${name} connector has no ${role} pool: set ${option}.${role}`);
}
