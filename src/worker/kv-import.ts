import { rm } from "node:fs/promises";
import type { ImportedKv } from "../engines/index.js";
import { ArmatureError, type KvHandoff } from "../protocol/index.js";
import type { BackendName, TransferAgent } from "../transfer/index.js";
import { handoffDoneMessage } from "./kv-exports.js";

/** A handoff's KV, pulled to this worker and ready for the engine. */
export interface PulledKv {
  readonly importedKv: ImportedKv;
  /**
   * How the bytes came (`modelled`: the mocker's estimate, nothing moved), and the bytes of the
   * prompt's first blocks that stayed behind because this worker holds them (handoffs with `fromToken`).
   */
  readonly transfer: {
    /** `engine`: the engine servers moved the KV themselves (vLLM's NixlConnector); armature saw no bytes. */
    readonly backend: BackendName | "engine";
    readonly bytes: number;
    readonly ms: number;
    readonly modelled: boolean;
    readonly savedBytes?: number | undefined;
  };
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
  const fromToken = handoff.fromToken || undefined;
  const savedBytes = fromToken && handoff.wholeBytes ? Math.max(0, handoff.wholeBytes - handoff.bytes) : undefined;
  if (handoff.format !== "engine-transfer-params" && handoff.firstToken === undefined) {
    throw new ArmatureError("TRANSFER_FAILED", `KV handoff ${handoff.id} carries no first token`);
  }
  const firstToken = handoff.firstToken as number;
  if (handoff.format === "modelled") {
    const estimate = agent.estimate(handoff.agent, handoff.bytes);
    return {
      importedKv: { format: "modelled", firstToken, transferMs: estimate.ms, fromToken },
      transfer: { backend: estimate.backend, bytes: handoff.bytes, ms: estimate.ms, modelled: true, savedBytes },
      release: async () => undefined,
    };
  }
  if (handoff.format === "engine-transfer-params") {
    if (!handoff.engineParams)
      throw new ArmatureError("TRANSFER_FAILED", `KV handoff ${handoff.id} carries no engine parameters`);
    return {
      importedKv: { format: "engine-transfer-params", params: handoff.engineParams },
      transfer: { backend: "engine", bytes: 0, ms: 0, modelled: false },
      release: async () => undefined,
    };
  }
  await checkHandoff(agent, handoff);
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
      importedKv: { format: "llamacpp-sequence-state", path, firstToken, fromToken },
      transfer: { backend: result.backend, bytes: result.bytes, ms: result.seconds * 1000, modelled: false, savedBytes },
      release,
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/**
 * A handoff comes from the request plane: before it names a file or sizes one, check that its id is
 * a plain name, its byte count is what its descriptors add up to (all of them the prefill agent's),
 * and the shared folder has room for it. Refusals are `TRANSFER_FAILED`; the caller prefills locally.
 */
async function checkHandoff(agent: TransferAgent, handoff: KvHandoff): Promise<void> {
  const refuse = (why: string): ArmatureError =>
    new ArmatureError("TRANSFER_FAILED", `refused KV handoff ${JSON.stringify(handoff.id).slice(0, 80)}: ${why}`);
  if (typeof handoff.id !== "string" || !/^[A-Za-z0-9-]{1,128}$/.test(handoff.id)) throw refuse("its id is not a plain id");
  const descriptors = Array.isArray(handoff.descriptors) ? handoff.descriptors : [];
  if (descriptors.length === 0) throw refuse("it has no descriptors");
  if (descriptors.some((d) => d?.agent !== handoff.agent)) throw refuse(`a descriptor names another agent than ${handoff.agent}`);
  const described = descriptors.reduce(
    (sum, d) => sum + (Number.isSafeInteger(d.length) && d.length >= 0 ? d.length : Number.NaN),
    0,
  );
  if (!Number.isSafeInteger(handoff.bytes) || handoff.bytes !== described) {
    throw refuse(`it claims ${handoff.bytes} bytes and describes ${described}`);
  }
  const free = await agent.sharedFreeBytes();
  if (free < handoff.bytes) throw refuse(`${handoff.bytes} bytes do not fit in the ${free} free in ${agent.sharedDir}`);
}
