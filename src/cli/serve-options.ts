import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import type { GpuChoice, KvCacheType, SchedulingPolicy } from "../engines/index.js";
import type { ReasoningParserName, ToolCallParserName } from "../frontend/index.js";
import type { KvOffloadTiming } from "../kvbm/index.js";
import { type PlannerOptions, parseProfile, type WorkerProfile } from "../planner/index.js";
import { ArmatureError, type WorkerRole } from "../protocol/index.js";
import type { BusSecurityOptions, DiscoverySecurityOptions } from "../runtime/index.js";
import { parseByteSize } from "./byte-size.js";
import { parsePredictorPeriod } from "./planner-settings.js";
import { configError, type RouterName, serveSettings } from "./serve-settings.js";
import { loraOptions, type ModelSpec, modelOptions } from "./served-models.js";
import type { Setting } from "./setting.js";

export { type RouterName, serveSettings, serveUsage } from "./serve-settings.js";

/** `armature serve` settings, after flags, `ARMATURE_*` variables and the config file are merged. */
/** The Files and Batch APIs' flags; where batches live is decided at start (`batchPlace`). */
export interface BatchSettings {
  /** `--batch-dir` as given; undefined: the KV object store when one is set, else ~/.cache/armature/batches. */
  readonly dir: string | undefined;
  readonly concurrency: number;
  readonly maxFileBytes: number;
}

export interface ServeOptions {
  readonly host: string;
  readonly port: number;
  /** `--metrics-port`: `armature worker`'s Prometheus endpoint; undefined (flag 0, the default): off. */
  readonly metricsPort: number | undefined;
  /** `--grpc-port`: KServe v2 gRPC on this port too; undefined (flag 0, the default): off. */
  readonly grpcPort: number | undefined;
  /** Largest accepted request body (`--max-body-bytes`); larger ones get 413. */
  readonly maxBodyBytes: number;
  /** The Files and Batch APIs (`--batch-dir`, `--batch-concurrency`, `--batch-max-file-bytes`); undefined: off. */
  readonly batches: BatchSettings | undefined;
  /** Prefill workers: exported KV held for decode workers at once (count, bytes, free space kept). */
  readonly maxKvExports: number | undefined;
  readonly maxKvExportBytes: number | undefined;
  readonly minSharedFreeBytes: number | undefined;
  /** Deadline of each request in ms (`--request-timeout`, given in seconds); undefined: none. */
  readonly requestTimeoutMs: number | undefined;
  /** `--tool-call-parser`: how answers to `tool_choice: "auto"` are read; undefined: each chat template tells. */
  readonly toolCallParser: ToolCallParserName | undefined;
  /** `--reasoning-parser`: how chat answers' reasoning is split off; undefined: it is not. */
  readonly reasoningParser: ReasoningParserName | undefined;
  /** `--api-key` (repeatable) or `ARMATURE_API_KEY` (comma-separated): keys without limits. */
  readonly apiKeys: readonly string[];
  /** YAML or JSON list of keys with names, limits and models; reloaded on SIGHUP. */
  readonly apiKeysFile: string | undefined;
  /** `/metrics` asks for a key too (only with keys). */
  readonly metricsRequireKey: boolean;
  /** HTTPS instead of HTTP (`--tls-cert`, `--tls-key`, `--tls-ca`); files reread on SIGHUP. */
  readonly tls: HttpsFiles | undefined;
  readonly engine: "llamacpp" | "mocker" | EngineServerKind;
  /** `--engine-url` (repeatable): the engine servers a sidecar worker drives, one worker each. */
  readonly engineUrls: readonly string[];
  /** `--prefill-engine-url` (repeatable, vllm): engine servers that prefill for those of `engineUrls`, which then decode. */
  readonly prefillEngineUrls: readonly string[];
  /** `--kv-events-endpoint`, `--kv-events-replay-endpoint`: per engine URL, in its order (vllm). */
  readonly kvEventsEndpoints: readonly string[];
  readonly kvEventsReplayEndpoints: readonly string[];
  /** `--engine-wait`, in ms: how long a sidecar worker waits for its engine's health at start (default 60 s). */
  readonly engineWaitMs: number | undefined;
  readonly model: string | undefined;
  /** `--tokenizer DIR`: a sidecar's model tokenizer as a Hugging Face folder, instead of a GGUF `--model`. */
  readonly tokenizer: string | undefined;
  readonly modelName: string | undefined;
  /** Every `--model` given (llamacpp serves them side by side); `model` and `modelName` are the first's. */
  readonly models: readonly ModelSpec[];
  /** `--lora NAME=PATH`: LoRA adapters each llama.cpp worker serves beside the model. */
  readonly loras: readonly { readonly name: string; readonly path: string }[];
  /** `--max-loras`: adapters with a context at once per worker (llamacpp; default 1). */
  readonly maxLoras: number | undefined;
  readonly workers: number;
  /** `armature frontend`: HTTP processes sharing the port (node:cluster), each with a router replica. */
  readonly frontendProcesses: number;
  readonly blockSize: number | undefined;
  /** Absent: `kv` when the workers publish KV events, else round-robin. */
  readonly router: RouterName | undefined;
  /** `--speedup-ratio` (mocker); undefined: 1. */
  readonly speedupRatio: number | undefined;
  /** `--scheduling-policy` (mocker); undefined: fcfs. */
  readonly schedulingPolicy: SchedulingPolicy | undefined;
  readonly timingProfile: string | undefined;
  readonly busyDecodeBlocks: number | undefined;
  readonly busyPrefillFrac: number | undefined;
  readonly busySequencesFrac: number | undefined;
  readonly priorityReserve: number | undefined;
  readonly routerQueueSize: number | undefined;
  /** false: the KV router ignores worker events and predicts caches from its own decisions. */
  readonly kvEvents: boolean;
  readonly migrationLimit: number;
  /** `nats://host:port` for `armature worker` and `armature frontend`. */
  readonly bus: string | undefined;
  /** `etcd://host:port` for `armature worker` and `armature frontend`. */
  readonly discovery: string | undefined;
  /** NATS credentials and TLS files (`--bus-creds`, `--bus-token`, `--bus-user`, `--bus-tls-*`). */
  readonly busSecurity: BusSecurityOptions;
  /** etcd credentials and TLS files (`--discovery-user`, `--discovery-password`, `--discovery-tls-*`). */
  readonly discoverySecurity: DiscoverySecurityOptions;
  /** Over NATS: a call whose worker makes no progress for this long fails retryably (default 60 s). */
  readonly progressTimeoutMs: number | undefined;
  /** `--sequences`: concurrent sequences per worker (llamacpp default 4, mocker 256); undefined: the engine's default. */
  readonly sequences: number | undefined;
  /** llama.cpp hardware flags (`--threads`, `--gpu`, …); undefined: each one's default. */
  readonly llama: LlamaHardwareOptions;
  /** Tokens per sequence; absent: each engine's default (llamacpp 2048, mocker 32768). */
  readonly contextSize: number | undefined;
  readonly logLevel: string;
  /** `--otlp-endpoint`: where request spans go (OTLP/HTTP); undefined: not exported. */
  readonly otlpEndpoint: string | undefined;
  /** `armature serve`: prefill workers (disaggregated serving when above 0). */
  readonly prefillWorkers: number;
  /** `armature serve`: decode workers beside the prefill workers (default `workers`). */
  readonly decodeWorkers: number | undefined;
  /** `armature worker`: the role its workers register with. */
  readonly role: WorkerRole;
  /** Prompts with fewer uncached tokens are prefilled on the decode worker. 0: always disaggregate. */
  readonly disaggThreshold: number;
  /** Prefill on the decode worker while prefill workers hold this many requests each. */
  readonly disaggMaxPrefillQueue: number | undefined;
  /** Prefill on the decode worker when the modelled KV transfer would take longer (ms). */
  readonly disaggMaxTransferMs: number | undefined;
  /** Address the workers' transfer agents listen on (default 127.0.0.1). */
  readonly transferHost: string | undefined;
  /** Address peers dial to reach the transfer agents, when it differs from `transferHost`. */
  readonly transferAdvertiseHost: string | undefined;
  /** Shared secret transfer agents prove to each other; required when `transferHost` is not loopback. */
  readonly transferSecret: string | undefined;
  /** Keep KV events in JetStream so a router that starts late rebuilds its index from them. */
  readonly durableKvEvents: boolean;
  /** KV router: weight of prefill work against decode load in the cost (default 4; Dynamo's 1). */
  readonly kvOverlapWeight: number | undefined;
  /** KV router: what a worker's lead (blocks no other worker holds) counts, in overlap weights (default 8; Dynamo's 1). */
  readonly kvExclusiveFactor: number | undefined;
  /** KV router: above 0, a softmax over the costs is sampled instead of taking the cheapest. */
  readonly routerTemperature: number | undefined;
  readonly lowerTierWeight: number | undefined;
  readonly kvBlocks: number | undefined;
  readonly hostKvBlocks: number | undefined;
  readonly hostGbps: number | undefined;
  /** Mocker: disk-tier (G3) blocks per worker and its onboarding bandwidth, GB/s. */
  readonly diskKvBlocks: number | undefined;
  readonly diskGbps: number | undefined;
  /** KV block manager tiers (llamacpp): G2 host bytes, G3 folder and bytes, G4 object store URL. */
  readonly kvHostBytes: number | undefined;
  readonly kvDiskDir: string | undefined;
  readonly kvDiskBytes: number | undefined;
  readonly kvObjectStore: string | undefined;
  /** Host → disk only for blocks used twice (`--kv-disk-filter`, default on). */
  readonly kvDiskFilter: boolean;
  /** When a request's blocks go down the tiers (`--kv-offload`; undefined: not given, as-filled). */
  readonly kvOffload: KvOffloadTiming | undefined;
  /** The SLA planner's settings (`--planner load|sla` and its flags); undefined: a fixed fleet. */
  readonly planner: PlannerOptions | undefined;
}

/** llama.cpp's hardware flags, as given (undefined: not given). */
export interface LlamaHardwareOptions {
  readonly threads: number | undefined;
  readonly gpu: GpuChoice | undefined;
  readonly gpuLayers: number | "max" | undefined;
  readonly batchSize: number | undefined;
  readonly flashAttention: "auto" | "on" | "off" | undefined;
  readonly kvCacheType: KvCacheType | undefined;
}

/** The PEM files of `--tls-cert`, `--tls-key` and `--tls-ca`. */
export interface HttpsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** CA of the client certificates; given, clients must present one (mutual TLS). */
  readonly clientCaFile: string | undefined;
}

/** The engines that run as servers someone else starts, each driven by a sidecar worker. */
export type EngineServerKind = "llama-server" | "vllm" | "sglang" | "trtllm";

export function isEngineServer(engine: string): engine is EngineServerKind {
  return engine === "llama-server" || engine === "vllm" || engine === "sglang" || engine === "trtllm";
}

export function resolveServeOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ServeOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      ...Object.fromEntries(
        Object.entries(serveSettings).map(([k, s]) => [
          k,
          s.type === "boolean" ? { type: "boolean" as const } : { type: "string" as const, multiple: s.multiple ?? false },
        ]),
      ),
      config: { type: "string" },
    },
    strict: true,
    allowPositionals: false,
  });
  const configPath = (values.config as string | undefined) ?? env.ARMATURE_CONFIG;
  const config = configPath ? readConfig(configPath) : {};
  const raw = (flag: string): string | undefined => {
    const setting = serveSettings[flag] as Setting;
    const fromFlag = (values as Record<string, string | undefined>)[flag];
    const fromConfig = config[flag];
    return fromFlag ?? env[setting.env] ?? (fromConfig === undefined ? undefined : String(fromConfig));
  };
  const str = (flag: string): string | undefined => {
    const value = raw(flag);
    const choices = serveSettings[flag]?.choices;
    if (value !== undefined && choices && !choices.includes(value)) {
      throw configError(flag, `must be one of ${choices.join(", ")}, got '${value}'`);
    }
    return value;
  };
  const list = (flag: string): string[] => {
    const fromFlag = (values as Record<string, unknown>)[flag] as string[] | undefined;
    if (fromFlag !== undefined && fromFlag.length > 0) return fromFlag;
    const fromEnv = env[(serveSettings[flag] as Setting).env];
    if (fromEnv !== undefined) return fromEnv.split(",").filter((item) => item.trim() !== "");
    const fromConfig = config[flag];
    if (fromConfig === undefined) return [];
    return Array.isArray(fromConfig) ? fromConfig.map(String) : [String(fromConfig)];
  };
  const bool = (flag: string): boolean => {
    if ((values as Record<string, unknown>)[flag] === true) return true;
    const value = env[(serveSettings[flag] as Setting).env] ?? config[flag];
    if (value === undefined || value === false || value === true) return value === true;
    if (/^(1|true|on|yes)$/i.test(String(value))) return true;
    if (/^(0|false|off|no|)$/i.test(String(value))) return false;
    throw configError(flag, `must be on or off, got '${String(value)}'`);
  };
  const num = (flag: string, integer: boolean, min: number): number | undefined => {
    const value = raw(flag);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min) {
      throw configError(flag, `must be ${integer ? "an integer" : "a number"} ≥ ${min}, got '${value}'`);
    }
    return n;
  };
  /** A share in [0, 1). */
  const fraction = (flag: string): number | undefined => {
    const n = num(flag, false, 0);
    if (n !== undefined && n >= 1) throw configError(flag, `must be a share from 0 up to (not including) 1, got '${n}'`);
    return n;
  };
  const size = (flag: string): number | undefined => {
    const value = raw(flag);
    if (value === undefined) return undefined;
    const bytes = parseByteSize(value);
    if (bytes === undefined) throw configError(flag, `must be a size in bytes, e.g. 512MiB or 2GiB, got '${value}'`);
    return bytes;
  };
  /** The planner's flags; any given without --planner is refused by name. */
  const plannerOptions = (): PlannerOptions | undefined => {
    const mode = str("planner") as PlannerOptions["mode"] | undefined;
    const profilePath = str("profile");
    const given: PlannerOptions = {
      ...(mode ? { mode } : {}),
      ...optionalNumber("sloTtftMs", num("slo-ttft", false, Number.MIN_VALUE)),
      ...optionalNumber("sloItlMs", num("slo-itl", false, Number.MIN_VALUE)),
      ...optionalNumber("minWorkers", num("min-workers", true, 0)),
      ...optionalNumber("scaleToZeroAfterSeconds", num("scale-to-zero-after", false, Number.MIN_VALUE)),
      ...optionalNumber("maxWorkers", num("max-workers", true, 0)),
      ...optionalNumber("intervalSeconds", num("planner-interval", false, Number.MIN_VALUE)),
      ...optionalNumber("loadIntervalSeconds", num("planner-load-interval", false, Number.MIN_VALUE)),
      ...optionalNumber("cooldownSeconds", num("planner-cooldown", false, 0)),
      ...optionalNumber("scaleUpThreshold", num("planner-up-threshold", false, Number.MIN_VALUE)),
      ...optionalNumber("scaleDownThreshold", num("planner-down-threshold", false, 0)),
      ...optionalNumber("latencyQuantile", num("planner-quantile", false, 0)),
      ...(str("predictor") !== undefined ? { predictor: str("predictor") as string } : {}),
      ...(str("predictor-period") !== undefined ? { predictorPeriod: parsePredictorPeriod(str("predictor-period")) } : {}),
      ...(bool("planner-advisory") ? { advisory: true } : {}),
      ...(profilePath ? { profile: readProfile(profilePath) } : {}),
    };
    if (!mode) {
      const stray = Object.keys(given)[0];
      if (stray)
        throw configError(
          "planner",
          `is needed by the planner's flags (${stray} was given): add --planner load or --planner sla`,
        );
      return undefined;
    }
    return given;
  };
  return {
    host: str("host") ?? "127.0.0.1",
    port: num("port", true, 0) ?? 8000,
    grpcPort: ((port) => (port === 0 ? undefined : port))(num("grpc-port", true, 0) ?? 0),
    metricsPort: ((port) => (port === 0 ? undefined : port))(num("metrics-port", true, 0) ?? 0),
    maxBodyBytes: num("max-body-bytes", true, 1024) ?? 8 * 1024 * 1024,
    batches: ((dir) =>
      dir === "off"
        ? undefined
        : {
            dir: dir === undefined || dir === "" ? undefined : dir,
            concurrency: num("batch-concurrency", true, 1) ?? 4,
            maxFileBytes: num("batch-max-file-bytes", true, 1) ?? 100 * 1024 * 1024,
          })(str("batch-dir")),
    maxKvExports: num("max-kv-exports", true, 1),
    maxKvExportBytes: num("max-kv-export-bytes", true, 1),
    minSharedFreeBytes: num("min-shared-free-bytes", true, 0),
    requestTimeoutMs: ((seconds) => (seconds === 0 ? undefined : seconds * 1000))(num("request-timeout", false, 0) ?? 600),
    toolCallParser: str("tool-call-parser") as ToolCallParserName | undefined,
    reasoningParser: str("reasoning-parser") as ReasoningParserName | undefined,
    apiKeys: list("api-key"),
    apiKeysFile: str("api-keys-file"),
    metricsRequireKey: bool("metrics-require-key"),
    tls: httpsFiles(str("tls-cert"), str("tls-key"), str("tls-ca")),
    engine: (str("engine") as ServeOptions["engine"] | undefined) ?? "llamacpp",
    engineUrls: list("engine-url"),
    prefillEngineUrls: list("prefill-engine-url"),
    kvEventsEndpoints: list("kv-events-endpoint"),
    kvEventsReplayEndpoints: list("kv-events-replay-endpoint"),
    engineWaitMs: ((seconds) => (seconds === undefined ? undefined : seconds * 1000))(num("engine-wait", false, 0)),
    ...modelOptions(list("model"), str("model-name"), str("engine") ?? "llamacpp"),
    ...loraOptions(list("lora"), num("max-loras", true, 1), list("model"), str("engine") ?? "llamacpp"),
    tokenizer: str("tokenizer"),
    workers: num("workers", true, 1) ?? 1,
    frontendProcesses: num("frontend-processes", true, 1) ?? 1,
    blockSize: num("block-size", true, 1),
    router: str("router") as RouterName | undefined,
    speedupRatio: num("speedup-ratio", false, Number.MIN_VALUE),
    schedulingPolicy: str("scheduling-policy") as SchedulingPolicy | undefined,
    timingProfile: str("timing-profile"),
    busyDecodeBlocks: num("busy-decode-blocks", false, 0),
    busyPrefillFrac: num("busy-prefill-frac", false, 0),
    busySequencesFrac: num("busy-sequences-frac", false, 0.01),
    priorityReserve: fraction("priority-reserve"),
    routerQueueSize: num("router-queue-size", true, 0),
    kvEvents: str("kv-events") !== "off",
    migrationLimit: num("migration-limit", true, 0) ?? 3,
    bus: str("bus"),
    discovery: str("discovery"),
    busSecurity: {
      credsFile: str("bus-creds"),
      token: str("bus-token"),
      user: str("bus-user"),
      password: str("bus-password"),
      tlsCaFile: str("bus-tls-ca"),
      tlsCertFile: str("bus-tls-cert"),
      tlsKeyFile: str("bus-tls-key"),
    },
    progressTimeoutMs: num("progress-timeout-ms", true, 1),
    discoverySecurity: {
      user: str("discovery-user"),
      password: str("discovery-password"),
      tlsCaFile: str("discovery-tls-ca"),
      tlsCertFile: str("discovery-tls-cert"),
      tlsKeyFile: str("discovery-tls-key"),
    },
    sequences: num("sequences", true, 1),
    llama: {
      threads: num("threads", true, 1),
      gpu: str("gpu") as GpuChoice | undefined,
      gpuLayers: ((value) => {
        if (value === undefined || value === "max") return value;
        if (!/^\d+$/.test(value)) throw configError("gpu-layers", `must be a layer count or max, got '${value}'`);
        return Number(value);
      })(str("gpu-layers")),
      batchSize: num("batch-size", true, 1),
      flashAttention: str("flash-attention") as LlamaHardwareOptions["flashAttention"],
      kvCacheType: str("kv-cache-type") as KvCacheType | undefined,
    },
    contextSize: num("context-size", true, 16),
    logLevel: str("log-level") ?? "info",
    otlpEndpoint: httpUrl("otlp-endpoint", str("otlp-endpoint")),
    prefillWorkers: num("prefill", true, 0) ?? 0,
    decodeWorkers: num("decode", true, 1),
    role: (str("role") as WorkerRole | undefined) ?? "aggregated",
    disaggThreshold: num("disagg-threshold", true, 0) ?? 0,
    disaggMaxPrefillQueue: num("disagg-max-prefill-queue", true, 1),
    disaggMaxTransferMs: num("disagg-max-transfer-ms", false, 0),
    transferHost: str("transfer-host"),
    transferAdvertiseHost: str("transfer-advertise-host"),
    transferSecret: str("transfer-secret"),
    durableKvEvents: str("durable-kv-events") === "on",
    kvOverlapWeight: num("kv-overlap-weight", false, 0),
    kvExclusiveFactor: num("kv-exclusive-factor", false, 1),
    routerTemperature: num("router-temperature", false, 0),
    lowerTierWeight: num("lower-tier-weight", false, 0),
    kvBlocks: num("kv-blocks", true, 1),
    hostKvBlocks: num("host-kv-blocks", true, 0),
    hostGbps: num("host-gbps", false, Number.MIN_VALUE),
    diskKvBlocks: num("disk-kv-blocks", true, 0),
    diskGbps: num("disk-gbps", false, Number.MIN_VALUE),
    kvHostBytes: size("kv-host-bytes"),
    kvDiskDir: str("kv-disk-dir"),
    kvDiskBytes: size("kv-disk-bytes"),
    kvObjectStore: str("kv-object-store"),
    kvDiskFilter: str("kv-disk-filter") !== "off",
    kvOffload: str("kv-offload") as KvOffloadTiming | undefined,
    planner: plannerOptions(),
  };
}

function optionalNumber<K extends string>(key: K, value: number | undefined): { [P in K]?: number } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: number };
}

/** The worker profile of `--profile`, parsed; errors name the flag and the file. */
export function readProfile(path: string): WorkerProfile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `--profile ${path} cannot be read: ${(cause as Error).message}`, { cause });
  }
  try {
    return parseProfile(text, path);
  } catch (error) {
    throw new ArmatureError("CONFIG_INVALID", `--profile: ${(error as Error).message}`, { cause: error });
  }
}

function readConfig(path: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not a JSON object");
    const unknown = Object.keys(parsed).filter((k) => !(k in serveSettings));
    if (unknown.length > 0) throw new Error(`unknown keys ${unknown.join(", ")}; keys are the flag names`);
    return parsed as Record<string, unknown>;
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `config file ${path}: ${(cause as Error).message}`, { cause });
  }
}

function httpsFiles(certFile?: string, keyFile?: string, clientCaFile?: string): HttpsFiles | undefined {
  if (certFile !== undefined && keyFile !== undefined) return { certFile, keyFile, clientCaFile };
  if (certFile !== undefined) throw configError("tls-key", "is missing: HTTPS needs the private key of --tls-cert");
  if (keyFile !== undefined) throw configError("tls-cert", "is missing: HTTPS needs the certificate of --tls-key");
  if (clientCaFile !== undefined) throw configError("tls-cert", "and --tls-key are missing: --tls-ca needs HTTPS");
  return undefined;
}

function httpUrl(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (URL.canParse(value) && /^https?:$/.test(new URL(value).protocol)) return value;
  throw configError(flag, `must be an http:// or https:// URL, e.g. http://localhost:4318, got '${value}'`);
}
