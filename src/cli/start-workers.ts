import { randomBytes } from "node:crypto";
import {
  type Engine,
  ensureTinyModel,
  LlamaCppEngine,
  type LlamaCppEngineOptions,
  loadTimingProfile,
  MockerEngine,
  profiledTimingModel,
  type TimingModel,
} from "../engines/index.js";
import { type KvbmSettings, workerDiskDirectory } from "../kvbm/index.js";
import { createTracing, type Logger, type MetricMeter, PrometheusMeter } from "../observability/index.js";
import { plannerWorkerOrigin } from "../planner/connectors/local-worker.js";
import { ArmatureError, type WorkerRole } from "../protocol/index.js";
import { MemoryDiscovery, type Runtime } from "../runtime/index.js";
import { checkTransferSecret, openObjectStore, type TransferAgentOptions } from "../transfer/index.js";
import { WorkerHost } from "../worker/index.js";
import { startEngineSidecars } from "./engine-sidecars.js";
import { isEngineServer, type LlamaHardwareOptions, type ServeOptions } from "./serve-options.js";
import { servedModelName } from "./served-models.js";
import type { StartedWorkers } from "./started-workers.js";

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

/**
 * The secret the workers' transfer agents prove to each other: `--transfer-secret`, or, when every
 * worker lives in this process (`armature serve`, in-memory discovery), a random one, since no other
 * process needs to know it. Workers of `armature worker` share the one given, or none on loopback.
 */
export function transferSecret(options: ServeOptions, runtime: Runtime): string | undefined {
  if (options.transferSecret !== undefined) return options.transferSecret;
  return runtime.discovery instanceof MemoryDiscovery ? randomBytes(32).toString("hex") : undefined;
}

/** Creates an engine per worker role and registers a worker host for each on the runtime. */
export async function startWorkers(
  options: ServeOptions,
  runtime: Runtime,
  logger: Logger,
  meter: MetricMeter = new PrometheusMeter(),
): Promise<StartedWorkers> {
  refuseLlamaFlags(options);
  refuseMockerFlags(options);
  refuseKvTierFlags(options);
  if (isEngineServer(options.engine)) return startEngineSidecars(options, runtime, logger);
  refuseSidecarFlags(options);
  // The models to serve: each --model on llama.cpp (the generated tiny model without one), the mocker's one.
  const models: { path: string | undefined; name: string }[] =
    options.engine !== "llamacpp"
      ? [{ path: undefined, name: options.modelName ?? "armature-mocker" }]
      : options.models.length > 0
        ? options.models.map((m, i) => ({
            path: m.path,
            name: (i === 0 ? options.modelName : m.name) ?? servedModelName(m.path),
          }))
        : await ensureTinyModel().then((path) => [{ path, name: options.modelName ?? servedModelName(path) }]);
  const clash = options.loras.find((lora) => models.some((m) => m.name === lora.name));
  if (clash) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--lora ${clash.name}=${clash.path}: '${clash.name}' is the served model's name; give the adapter another`,
    );
  }
  const timing: TimingModel | undefined = options.timingProfile
    ? profiledTimingModel(await loadTimingProfile(options.timingProfile), options.speedupRatio ?? 1)
    : undefined;
  const secret = transferSecret(options, runtime);
  // Before any model loads: a transfer port beyond loopback without a secret is refused.
  checkTransferSecret(options.transferHost ?? "127.0.0.1", secret);
  const transferLog = logger.child({ component: "transfer" });
  const transfer: TransferAgentOptions = {
    ...(options.transferHost ? { host: options.transferHost } : {}),
    ...(options.transferAdvertiseHost ? { advertiseHost: options.transferAdvertiseHost } : {}),
    secret,
    onRefused: ({ reason, detail, peer }) => transferLog.warn({ reason, peer, detail }, "transfer connection refused"),
  };
  const workers: WorkerHost[] = [];
  const tracing = await createTracing({ endpoint: options.otlpEndpoint, serviceName: "armature-worker", logger });
  const tiers = await openKvTiers(options, runtime);
  // The engines this process may run side by side share its cores (the default --threads).
  const workersInProcess = Math.max(workerRoles(options).length, options.planner?.maxWorkers ?? 0) * models.length;
  let started = 0;
  const addWorker = async (role: WorkerRole, model = models[0] as (typeof models)[number]): Promise<WorkerHost> => {
    const index = started++;
    const { path: modelPath, name: modelName } = model;
    const kvbm = tiers?.(index);
    const engine: Engine = modelPath
      ? await LlamaCppEngine.create({
          modelPath,
          sequences: options.sequences ?? 4,
          contextSizePerSequence: options.contextSize ?? 2048,
          ...llamaHardware(options.llama),
          workersInProcess,
          loras: options.loras,
          maxLoras: options.maxLoras,
          ...(options.blockSize ? { blockSize: options.blockSize } : {}),
          ...(kvbm ? { kvbm: { settings: kvbm, modelName, workerLabel: String(index), meter, logger } } : {}),
        })
      : new MockerEngine({
          speedupRatio: options.speedupRatio ?? 1,
          ...(options.schedulingPolicy ? { schedulingPolicy: options.schedulingPolicy } : {}),
          ...(options.sequences ? { maxSequences: options.sequences } : {}),
          ...(options.contextSize ? { contextLength: options.contextSize } : {}),
          ...(timing ? { timing } : {}),
          ...(options.blockSize ? { blockSize: options.blockSize } : {}),
          ...(options.kvBlocks ? { kvBlocks: options.kvBlocks } : {}),
          ...(options.hostKvBlocks ? { hostKvBlocks: options.hostKvBlocks } : {}),
          ...(options.hostGbps ? { hostGbps: options.hostGbps } : {}),
          ...(options.diskKvBlocks ? { diskKvBlocks: options.diskKvBlocks } : {}),
          ...(options.diskGbps ? { diskGbps: options.diskGbps } : {}),
        });
    const exportLimits = {
      maxExports: options.maxKvExports,
      maxBytes: options.maxKvExportBytes,
      minFreeBytes: options.minSharedFreeBytes,
    };
    try {
      return await WorkerHost.create({
        runtime,
        engine,
        modelName,
        logger,
        role,
        transfer,
        exportLimits,
        tracing,
        startedBy: plannerWorkerOrigin(),
      });
    } catch (error) {
      await engine.close();
      throw error;
    }
  };
  try {
    for (const model of models) for (const role of workerRoles(options)) workers.push(await addWorker(role, model));
  } catch (error) {
    await Promise.all(workers.map((w) => w.close(0)));
    await tracing.close();
    throw error;
  }
  return {
    workers,
    modelName: (models[0] as (typeof models)[number]).name,
    modelNames: models.map((m) => m.name),
    tracing,
    addWorker: (role, name) => {
      const model = name === undefined ? models[0] : models.find((m) => m.name === name);
      if (!model) return Promise.reject(new ArmatureError("CONFIG_INVALID", `no --model is named ${name}`));
      return addWorker(role, model);
    },
  };
}

/** The llama.cpp hardware flags given, as engine options (absent: the engine's default). */
function llamaHardware(llama: LlamaHardwareOptions): Partial<LlamaCppEngineOptions> {
  return Object.fromEntries(Object.entries(llama).filter(([, value]) => value !== undefined));
}

/** The engine-server flags, given to an engine that runs in this process: refused by name. */
function refuseSidecarFlags(options: ServeOptions): void {
  const given = (
    [
      ["engine-url", options.engineUrls.length > 0],
      ["prefill-engine-url", options.prefillEngineUrls.length > 0],
      ["kv-events-endpoint", options.kvEventsEndpoints.length > 0],
      ["kv-events-replay-endpoint", options.kvEventsReplayEndpoints.length > 0],
      ["engine-wait", options.engineWaitMs !== undefined],
      ["tokenizer", options.tokenizer !== undefined],
    ] as const
  ).find(([, present]) => present);
  if (given) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--${given[0]} is for the engine servers (--engine llama-server, vllm, sglang or trtllm); --engine ${options.engine} runs its model in this process`,
    );
  }
}

/** The mocker's modelling flags, given to a real engine: refused by name. */
function refuseMockerFlags(options: ServeOptions): void {
  if (options.engine === "mocker") return;
  const given = (
    [
      ["speedup-ratio", options.speedupRatio !== undefined],
      ["timing-profile", options.timingProfile !== undefined],
      // A vllm worker forwards each request's priority when its vLLM schedules by priority.
      ["scheduling-policy", options.schedulingPolicy !== undefined && options.engine !== "vllm"],
    ] as const
  ).find(([, present]) => present);
  if (given) {
    const engines = given[0] === "scheduling-policy" ? "--engine mocker and vllm" : "--engine mocker";
    throw new ArmatureError(
      "CONFIG_INVALID",
      isEngineServer(options.engine)
        ? `--${given[0]} is for ${engines}; ${options.engine} takes its own settings on its command line`
        : `--${given[0]} is for ${engines}; llama.cpp runs in real time, first come first served`,
    );
  }
}

function refuseLlamaFlags(options: ServeOptions): void {
  if (options.engine === "llamacpp") return;
  if (options.sequences !== undefined && isEngineServer(options.engine)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--sequences is for --engine llamacpp and mocker; ${options.engine} takes its own on its command line`,
    );
  }
  const flags: Record<keyof LlamaHardwareOptions, string> = {
    threads: "threads",
    gpu: "gpu",
    gpuLayers: "gpu-layers",
    batchSize: "batch-size",
    flashAttention: "flash-attention",
    kvCacheType: "kv-cache-type",
  };
  const given = (Object.keys(flags) as (keyof LlamaHardwareOptions)[]).find((key) => options.llama[key] !== undefined);
  if (given) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      isEngineServer(options.engine)
        ? `--${flags[given]} is for --engine llamacpp; ${options.engine} takes its own on its command line`
        : `--${flags[given]} is for --engine llamacpp; the ${options.engine} runs no llama.cpp`,
    );
  }
}

/** The `--kv-*` tier flags given (llama.cpp's KV block manager). */
function kvTierFlags(options: ServeOptions): string[] {
  return (
    [
      ["kv-host-bytes", options.kvHostBytes],
      ["kv-disk-dir", options.kvDiskDir],
      ["kv-disk-bytes", options.kvDiskBytes],
      ["kv-object-store", options.kvObjectStore],
      ["kv-offload", options.kvOffload],
    ] as const
  )
    .filter(([, value]) => value !== undefined)
    .map(([flag]) => flag);
}

/**
 * The KV tier flags, given to another engine than llama.cpp: refused by name. An engine server
 * keeps `--kv-object-store`: the Files and Batch APIs store their state there (`batchPlace`).
 */
function refuseKvTierFlags(options: ServeOptions): void {
  if (options.engine === "llamacpp") return;
  const server = isEngineServer(options.engine);
  const given = kvTierFlags(options).find((flag) => !(server && flag === "kv-object-store"));
  if (given === undefined) return;
  throw new ArmatureError(
    "CONFIG_INVALID",
    server
      ? `--${given} is for --engine llamacpp; ${options.engine} keeps its own KV cache, its offloading set on its command line`
      : `--${given} is for --engine llamacpp; the mocker models a host tier with --host-kv-blocks`,
  );
}

/**
 * The KV tiers each worker keeps below its device (`--kv-*` flags, llamacpp only): worker N gets
 * `worker-N/` under `--kv-disk-dir`, and all share one `--kv-object-store`. Undefined: none asked.
 */
async function openKvTiers(options: ServeOptions, runtime: Runtime): Promise<((index: number) => KvbmSettings) | undefined> {
  if (kvTierFlags(options).length === 0) return undefined;
  const tierless = options.kvHostBytes === undefined && options.kvDiskDir === undefined && options.kvObjectStore === undefined;
  if (options.kvOffload !== undefined && tierless) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--kv-offload needs a KV tier to copy blocks to (--kv-host-bytes, --kv-disk-dir or --kv-object-store)",
    );
  }
  if (options.kvDiskBytes !== undefined && options.kvDiskDir === undefined) {
    throw new ArmatureError("CONFIG_INVALID", "--kv-disk-bytes needs --kv-disk-dir (the folder of the disk tier)");
  }
  const objectStore = options.kvObjectStore
    ? await openObjectStore(options.kvObjectStore, { nats: runtime.busConnection })
    : undefined;
  return (index) => ({
    hostBytes: options.kvHostBytes,
    diskDirectory: options.kvDiskDir === undefined ? undefined : workerDiskDirectory(options.kvDiskDir, index),
    diskBytes: options.kvDiskBytes,
    objectStore,
    diskFrequencyFilter: options.kvDiskFilter,
    offload: options.kvOffload,
  });
}
