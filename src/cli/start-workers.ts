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
import type { Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";

/** Creates `options.workers` engines and registers a worker host for each on the runtime. */
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
    for (let i = 0; i < options.workers; i++) {
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
          });
      workers.push(await WorkerHost.create({ runtime, engine, modelName, logger }));
    }
  } catch (error) {
    await Promise.all(workers.map((w) => w.close(0)));
    throw error;
  }
  return { workers, modelName };
}
