import { existsSync } from "node:fs";
import { basename } from "node:path";
import { type Engine, ggufEngineTokenizer, LlamaServerEngine } from "../engines/index.js";
import { createTracing, type Logger } from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";
import type { StartedWorkers } from "./start-workers.js";

/**
 * `--engine llama-server`: one worker per `--engine-url`, each the sidecar of an unmodified
 * llama-server that someone else started. What a sidecar cannot do is refused by name: split
 * prefill and decode, a planner (it starts no engines), a worker count other than the URLs given.
 */
export async function startEngineSidecars(options: ServeOptions, runtime: Runtime, logger: Logger): Promise<StartedWorkers> {
  const urls = options.engineUrls;
  if (urls.length === 0) {
    throw new ArmatureError("CONFIG_INVALID", "--engine llama-server needs --engine-url (one per llama-server, repeatable)");
  }
  if (options.workers !== 1 && options.workers !== urls.length) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--workers ${options.workers}: a llama-server worker drives one --engine-url, and ${urls.length} were given`,
    );
  }
  if (options.prefillWorkers > 0 || options.role !== "aggregated") {
    throw new ArmatureError("CONFIG_INVALID", "--prefill/--role: llama-server workers serve aggregated only");
  }
  if (options.planner) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--planner: the planner starts workers, and llama-server workers need their engines started first",
    );
  }
  const modelPath = options.model ?? (await modelPathOf(urls[0] as string, options.engineWaitMs));
  const tokenizer = await ggufEngineTokenizer(modelPath);
  const modelName = options.modelName ?? basename(modelPath).replace(/\.gguf$/i, "");
  const tracing = await createTracing({ endpoint: options.otlpEndpoint, serviceName: "armature-worker", logger });
  const workers: WorkerHost[] = [];
  const connect = async (url: string): Promise<WorkerHost> => {
    const engine: Engine = await LlamaServerEngine.connect({
      url,
      tokenizer,
      startTimeoutMs: options.engineWaitMs,
      ...(options.blockSize ? { blockSize: options.blockSize } : {}),
    });
    try {
      return await WorkerHost.create({ runtime, engine, modelName, logger, role: "aggregated", tracing });
    } catch (error) {
      await engine.close();
      throw error;
    }
  };
  try {
    for (const url of urls) workers.push(await connect(url));
  } catch (error) {
    await Promise.all(workers.map((w) => w.close(0)));
    await tracing.close();
    throw error;
  }
  return {
    workers,
    modelName,
    tracing,
    addWorker: () => Promise.reject(new ArmatureError("NOT_SUPPORTED", "llama-server workers are added by starting them")),
  };
}

/** llama-server's own model path (`GET /props`), where this machine can read it. */
async function modelPathOf(url: string, waitMs: number): Promise<string> {
  const deadline = Date.now() + waitMs;
  let path: unknown;
  for (;;) {
    try {
      const response = await fetch(`${url.replace(/\/+$/, "")}/props`, { signal: AbortSignal.timeout(2000) });
      if (response.ok) path = ((await response.json()) as { model_path?: unknown }).model_path;
      else await response.body?.cancel();
    } catch {}
    if (path !== undefined || Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (typeof path === "string" && existsSync(path)) return path;
  throw new ArmatureError(
    "CONFIG_INVALID",
    `--model is needed: the worker reads the GGUF llama-server runs for its tokenizer, and ${
      typeof path === "string" ? `llama-server's ${path} is not readable here` : `${url}/props did not say where it is`
    }`,
  );
}
