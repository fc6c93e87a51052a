import { basename } from "node:path";
import {
  type Engine,
  ensureTinyModel,
  LlamaCppEngine,
  loadTimingProfile,
  MockerEngine,
  profiledTimingModel,
  type TimingModel,
} from "../engines/index.js";
import type { Logger } from "../observability/index.js";
import type { WorkerRole } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";

/**
 * The roles of the workers to start: `--prefill N` gives N prefill and `--decode M` (default
 * `--workers`) decode workers; otherwise `--workers` workers of `--role`.
 */
export function workerRoles(options: ServeOptions): WorkerRole[] {
  if (options.prefillWorkers > 0) {
    return [
      ...Array<WorkerRole>(options.prefillWorkers).fill("prefill"),
      ...Array<WorkerRole>(options.decodeWorkers ?? options.workers).fill("decode"),
    ];
  }
  return Array<WorkerRole>(options.workers).fill(options.role);
}

/** Creates an engine per worker role and registers a worker host for each on the runtime. */
export async function startWorkers(
  options: ServeOptions,
  runtime: Runtime,
  logger: Logger,
): Promise<{ workers: WorkerHost[]; modelName: string }> {
  const modelPath = options.engine === "llamacpp" ? (options.model ?? (await ensureTinyModel())) : undefined;
  const modelName =
    options.modelName ??
    (modelPath
      ? basename(modelPath)
          .replace(/\.gguf$/i, "")
          .replace(/-v\d+$/, "")
      : "armature-mocker");
  const timing: TimingModel | undefined = options.timingProfile
    ? profiledTimingModel(await loadTimingProfile(options.timingProfile), options.speedupRatio)
    : undefined;
  const workers: WorkerHost[] = [];
  try {
    for (const role of workerRoles(options)) {
      const engine: Engine = modelPath
        ? await LlamaCppEngine.create({
            modelPath,
            sequences: options.sequences,
            contextSizePerSequence: options.contextSize ?? 2048,
            ...(options.blockSize ? { blockSize: options.blockSize } : {}),
          })
        : new MockerEngine({
            speedupRatio: options.speedupRatio,
            ...(options.contextSize ? { contextLength: options.contextSize } : {}),
            ...(timing ? { timing } : {}),
            ...(options.blockSize ? { blockSize: options.blockSize } : {}),
            ...(options.kvBlocks ? { kvBlocks: options.kvBlocks } : {}),
            ...(options.hostKvBlocks ? { hostKvBlocks: options.hostKvBlocks } : {}),
            ...(options.hostGbps ? { hostGbps: options.hostGbps } : {}),
          });
      const transfer = {
        ...(options.transferHost ? { host: options.transferHost } : {}),
        ...(options.transferAdvertiseHost ? { advertiseHost: options.transferAdvertiseHost } : {}),
      };
      workers.push(await WorkerHost.create({ runtime, engine, modelName, logger, role, transfer }));
    }
  } catch (error) {
    await Promise.all(workers.map((w) => w.close(0)));
    throw error;
  }
  return { workers, modelName };
}
