import { existsSync } from "node:fs";
import { basename } from "node:path";
import {
  connectLlamaServer,
  connectSglang,
  connectTrtllm,
  connectVllm,
  type Engine,
  type EngineTokenizer,
  engineUrl,
  getJson,
  ggufEngineTokenizer,
  hfEngineTokenizer,
  waitHealthy,
} from "../engines/index.js";
import { createTracing, type Logger } from "../observability/index.js";
import { plannerWorkerOrigin } from "../planner/connectors/local-worker.js";
import type { WorkerRole } from "../protocol/index.js";
import { ArmatureError } from "../protocol/index.js";
import type { Runtime } from "../runtime/index.js";
import { WorkerHost } from "../worker/index.js";
import type { ServeOptions } from "./serve-options.js";
import type { StartedWorkers } from "./started-workers.js";

/**
 * `--engine llama-server`, `vllm`, `sglang` or `trtllm`: one worker per `--engine-url`, each the sidecar of an
 * unmodified engine server that someone else started (docs/engines.md); with `--prefill-engine-url`
 * (vllm, sglang), those servers prefill and the `--engine-url` ones decode, the KV moved by the
 * engines themselves. What a sidecar cannot do is refused by name: split roles on engines without a KV
 * connector protocol, a planner (it starts no engines), a worker count other than the URLs given,
 * KV event endpoints that do not pair with the URLs.
 */
export async function startEngineSidecars(options: ServeOptions, runtime: Runtime, logger: Logger): Promise<StartedWorkers> {
  const urls = options.engineUrls;
  if (urls.length === 0) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine ${options.engine} needs --engine-url (one per ${options.engine}, repeatable)`,
    );
  }
  const prefillUrls = options.prefillEngineUrls;
  const roles = sidecarRoles(options);
  const allUrls = [...urls, ...prefillUrls];
  const events = options.kvEventsEndpoints;
  const replays = options.kvEventsReplayEndpoints;
  if (options.engine === "llama-server" && events.length + replays.length > 0) {
    throw new ArmatureError("CONFIG_INVALID", "--kv-events-endpoint: llama-server publishes no KV events");
  }
  if (events.length > 0 && events.length !== urls.length && events.length !== allUrls.length) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--kv-events-endpoint was given ${events.length} times for ${urls.length} --engine-url${
        prefillUrls.length > 0 ? ` and ${prefillUrls.length} --prefill-engine-url` : ""
      }: give one per engine, in the same order (--engine-url ones first)`,
    );
  }
  if (replays.length > 0 && replays.length !== events.length) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--kv-events-replay-endpoint was given ${replays.length} times for ${events.length} --kv-events-endpoint: one per publisher, in the same order`,
    );
  }
  if (options.workers !== 1 && options.workers !== urls.length) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--workers ${options.workers}: a ${options.engine} worker drives one --engine-url, and ${urls.length} were given`,
    );
  }
  if (options.planner) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--planner: the planner starts workers, and ${options.engine} workers need their engines started first`,
    );
  }
  if (options.tokenizer !== undefined && options.model !== undefined) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--tokenizer and --model both name the model's tokenizer: give one (--model-name names the model)",
    );
  }
  if (options.engine !== "llama-server" && options.model === undefined && options.tokenizer === undefined) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--tokenizer is needed: a ${options.engine} worker reads the model's tokenizer (--tokenizer DIR, the model's Hugging Face folder with tokenizer.json; or --model, a GGUF of the model ${options.engine} serves)`,
    );
  }
  if (options.contextSize !== undefined && options.engine !== "trtllm") {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--context-size: the ${options.engine} says its own context length (it is read from the server); set it on the engine's command line`,
    );
  }
  const waitMs = options.engineWaitMs ?? 60_000;
  const tokenizer = await engineTokenizer(options, urls[0] as string, waitMs);
  const modelName = options.modelName ?? defaultModelName(tokenizer);
  const tracing = await createTracing({ endpoint: options.otlpEndpoint, serviceName: "armature-worker", logger });
  const workers: WorkerHost[] = [];
  const dropped = logger.child({ component: "engine-kv-events" });
  const connect = async (url: string, index: number, role: WorkerRole): Promise<WorkerHost> => {
    const common = { url, tokenizer, startTimeoutMs: waitMs, blockSize: options.blockSize };
    const publisher = {
      kvEventsEndpoint: events[index],
      kvEventsReplayEndpoint: replays[index],
      onDroppedEvents: (reason: string) => dropped.warn({ engineUrl: url, reason }, "KV event batch dropped"),
    };
    const engine: Engine =
      options.engine === "vllm"
        ? await connectVllm({ ...common, ...publisher, schedulingPolicy: options.schedulingPolicy })
        : options.engine === "sglang"
          ? await connectSglang({ ...common, ...publisher, role, loras: options.loras })
          : options.engine === "trtllm"
            ? await connectTrtllm({ ...common, ...publisher, loras: options.loras, contextLength: options.contextSize })
            : await connectLlamaServer({ ...common, loras: options.loras });
    try {
      return await WorkerHost.create({ runtime, engine, modelName, logger, role, tracing, startedBy: plannerWorkerOrigin() });
    } catch (error) {
      await engine.close();
      throw error;
    }
  };
  try {
    for (const [index, url] of allUrls.entries()) workers.push(await connect(url, index, roles[index] as WorkerRole));
    const unserved = options.loras.find((lora) => !workers.some((w) => w.card.loras?.includes(lora.name)));
    if (unserved) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        options.engine === "sglang"
          ? `--lora ${unserved.name}=${unserved.path}: no sglang at --engine-url serves an adapter named ${unserved.name}; start one with --lora-paths ${unserved.name}=${unserved.path}`
          : `--lora ${unserved.name}=${unserved.path}: no llama-server at --engine-url loaded that adapter (GET /lora-adapters); start one with --lora ${unserved.path}`,
      );
    }
  } catch (error) {
    await Promise.all(workers.map((w) => w.close(0)));
    await tracing.close();
    throw error;
  }
  return {
    workers,
    modelName,
    modelNames: [modelName],
    tracing,
    addWorker: () =>
      Promise.reject(
        new ArmatureError("NOT_SUPPORTED", `${options.engine} workers are added by starting their engines and workers`),
      ),
  };
}

/**
 * Each URL's worker role: `--engine-url` workers decode for `--prefill-engine-url` ones (vLLM with a
 * KV connector); `armature worker --role` gives all of its URLs one role; otherwise aggregated.
 * Engines that cannot hand their KV to a peer refuse split roles by name.
 */
function sidecarRoles(options: ServeOptions): WorkerRole[] {
  const split = options.prefillEngineUrls.length > 0 || options.role !== "aggregated";
  if (split && (options.engine === "llama-server" || options.engine === "trtllm")) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `${options.prefillEngineUrls.length > 0 ? "--prefill-engine-url" : `--role ${options.role}`}: ${options.engine} workers serve aggregated only (split prefill and decode through engine servers is driven for vllm and sglang)`,
    );
  }
  if (options.prefillWorkers > 0) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--prefill: engine-server workers prefill on the servers of --prefill-engine-url, one worker each",
    );
  }
  if (options.prefillEngineUrls.length > 0 && options.role !== "aggregated") {
    throw new ArmatureError("CONFIG_INVALID", "--role and --prefill-engine-url: give one (--role sets every URL's role)");
  }
  if (options.prefillEngineUrls.length > 0) {
    return [...options.engineUrls.map((): WorkerRole => "decode"), ...options.prefillEngineUrls.map((): WorkerRole => "prefill")];
  }
  return options.engineUrls.map(() => options.role);
}

/** `--tokenizer DIR`, `--model FILE`, or the GGUF llama-server says it runs. */
async function engineTokenizer(options: ServeOptions, url: string, waitMs: number): Promise<EngineTokenizer> {
  if (options.tokenizer !== undefined) return hfEngineTokenizer(options.tokenizer);
  return ggufEngineTokenizer(options.model ?? (await modelPathOf(url, waitMs)));
}

/** The GGUF's file name without `.gguf`, or the tokenizer folder's name. */
function defaultModelName(tokenizer: EngineTokenizer): string {
  return tokenizer.source.kind === "bytes" ? "model" : basename(tokenizer.source.path).replace(/\.gguf$/i, "");
}

/** llama-server's own model path (`GET /props`), where this machine can read it. */
async function modelPathOf(url: string, waitMs: number): Promise<string> {
  const at = engineUrl(url);
  await waitHealthy("llama-server", at, waitMs);
  const path = ((await getJson("llama-server", at, "/props")) as { model_path?: unknown } | null)?.model_path;
  if (typeof path === "string" && existsSync(path)) return path;
  throw new ArmatureError(
    "CONFIG_INVALID",
    `--model or --tokenizer is needed: the worker reads the tokenizer of the model llama-server runs (its GGUF, or --tokenizer DIR), and ${
      typeof path === "string" ? `llama-server's ${path} is not readable here` : `${at}/props did not say where it is`
    }`,
  );
}
