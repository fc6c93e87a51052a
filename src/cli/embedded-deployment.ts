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
import { Frontend } from "../frontend/index.js";
import { type Logger, PrometheusMeter } from "../observability/index.js";
import {
  ActiveLoad,
  ApproximateIndex,
  createBasicPolicy,
  KvIndexer,
  kvPolicy,
  Router,
  type RoutingPolicy,
  routerOverheadMetrics,
} from "../router/index.js";
import { createEmbeddedRuntime, type Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";

/** Frontend, router and workers in one process on the embedded runtime. */
export interface EmbeddedDeployment {
  readonly frontend: Frontend;
  readonly workers: readonly WorkerHost[];
  readonly runtime: Runtime;
  readonly modelName: string;
  /** Drains HTTP, then workers, then the runtime. */
  close(graceMs?: number): Promise<void>;
}

export async function startEmbeddedDeployment(options: ServeOptions, logger: Logger): Promise<EmbeddedDeployment> {
  const runtime = createEmbeddedRuntime({
    onEventHandlerError: (error, subject) => logger.error({ err: error, subject }, "event handler failed"),
  });
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
    await runtime.close();
    throw error;
  }
  const meter = new PrometheusMeter();
  const onOverhead = routerOverheadMetrics(meter);
  const activeLoad = new ActiveLoad({ routerId: "embedded", clock: runtime.clock });
  let indexer: KvIndexer | undefined;
  let policy: RoutingPolicy;
  const routerName = options.router ?? (workers.every((w) => w.card.publishesKvEvents) ? "kv" : "round-robin");
  if (routerName === "kv") {
    // The index must exist before workers publish, so it is built from the first card's block size.
    const blockSize = workers[0]?.card.blockSize ?? 16;
    if (options.kvEvents) {
      indexer = new KvIndexer({ runtime, logger, blockSize });
      policy = kvPolicy({ indexer, blockSize, activeLoad, onOverhead });
    } else {
      policy = kvPolicy({
        indexer: new ApproximateIndex({ clock: runtime.clock, blockSize }),
        blockSize,
        activeLoad,
        onOverhead,
      });
    }
  } else {
    policy = createBasicPolicy(routerName);
  }
  const router = new Router({
    runtime,
    policy,
    logger,
    activeLoad,
    busy: {
      ...(options.busyDecodeBlocks !== undefined ? { activeDecodeBlocks: options.busyDecodeBlocks } : {}),
      ...(options.busyPrefillFrac !== undefined ? { activePrefillTokensFrac: options.busyPrefillFrac } : {}),
      ...(options.routerQueueSize !== undefined ? { queueSize: options.routerQueueSize } : {}),
    },
  });
  const frontend = await Frontend.create({
    router,
    meter,
    kvIndexer: indexer,
    logger,
    host: options.host,
    port: options.port,
  });
  return {
    frontend,
    workers,
    runtime,
    modelName,
    async close(graceMs = 30_000) {
      await frontend.close(graceMs);
      router.close();
      indexer?.close();
      await Promise.all(workers.map((w) => w.close(graceMs)));
      await runtime.close();
    },
  };
}
