import { rm } from "node:fs/promises";
import type { ImportedKv } from "../engines/index.js";
import type { KvHandoff } from "../protocol/index.js";
import type { BackendName, TransferAgent } from "../transfer/index.js";
import { handoffDoneMessage } from "./kv-exports.js";

/** A handoff's KV, pulled to this worker and ready for the engine. */
export interface PulledKv {
  readonly importedKv: ImportedKv;
  /** How the bytes came (`modelled`: the mocker's estimate, nothing moved). */
  readonly transfer: { readonly backend: BackendName; readonly bytes: number; readonly ms: number; readonly modelled: boolean };
  /** Frees what the import left on this worker. */
  release(): Promise<void>;
}

/**
 * Pulls a prefill worker's exported KV into this worker's shared folder with the transfer agent
 * and tells the prefill worker it may free its copy. Throws (`TRANSFER_*`) when the bytes do not
 * arrive within `timeoutMs`; the caller then prefills locally.
 */
export async function pullKv(
  agent: TransferAgent,
  handoff: KvHandoff,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<PulledKv> {
  if (handoff.format === "modelled") {
    const estimate = agent.estimate(handoff.agent, handoff.bytes);
    return {
      importedKv: { format: "modelled", firstToken: handoff.firstToken, transferMs: estimate.ms },
      transfer: { backend: estimate.backend, bytes: handoff.bytes, ms: estimate.ms, modelled: true },
      release: async () => undefined,
    };
  }
  const path = agent.sharedPath(`import-${handoff.id}.state`);
  const region = await agent.registerFile(path, { id: `import-${handoff.id}`, length: handoff.bytes });
  const release = async (): Promise<void> => {
    agent.deregister(region.id);
    await rm(path, { force: true });
  };
  try {
    const result = await agent.read([agent.describe(region.id)], handoff.descriptors, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]),
      notification: handoffDoneMessage(handoff.id),
    });
    return {
      importedKv: { format: "llamacpp-sequence-state", path, firstToken: handoff.firstToken },
      transfer: { backend: result.backend, bytes: result.bytes, ms: result.seconds * 1000, modelled: false },
      release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}
