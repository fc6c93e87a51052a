import { SCHEDULING_POLICIES } from "../engines/index.js";
import { REASONING_PARSER_NAMES, TOOL_CALL_PARSER_NAMES } from "../frontend/index.js";
import { ArmatureError } from "../protocol/index.js";
import { basicPolicyNames } from "../router/index.js";
import { plannerSettings } from "./planner-settings.js";
import type { Setting } from "./setting.js";

export { plannerSizingFlags } from "./planner-settings.js";

export const routerNames = [...basicPolicyNames, "kv", "remote"] as const;
export type RouterName = (typeof routerNames)[number];

/** Every serve flag, its environment twin and its meaning; the config file uses the flag names. */
export const serveSettings: Record<string, Setting> = {
  host: { type: "string", env: "ARMATURE_HOST", help: "address to listen on (default 127.0.0.1)" },
  port: { type: "integer", env: "ARMATURE_PORT", help: "HTTP port (default 8000; 0 picks a free one)" },
  "metrics-port": {
    type: "integer",
    env: "ARMATURE_METRICS_PORT",
    help: "armature worker: serve GET /metrics and GET /health on this port, on --host (default 0: off)",
  },
  "grpc-port": {
    type: "integer",
    env: "ARMATURE_GRPC_PORT",
    help: "serve KServe v2 gRPC (inference.GRPCInferenceService) on this port too (default 0: off)",
  },
  "batch-dir": {
    type: "string",
    env: "ARMATURE_BATCH_DIR",
    help: "frontend: where the Files and Batch APIs keep files and batches across restarts (default: the --kv-object-store when set, else ~/.cache/armature/batches; off turns both APIs off)",
  },
  "batch-concurrency": {
    type: "integer",
    env: "ARMATURE_BATCH_CONCURRENCY",
    help: "frontend: batch requests in flight at once, at the lowest priority (default 4)",
  },
  "batch-max-file-bytes": {
    type: "integer",
    env: "ARMATURE_BATCH_MAX_FILE_BYTES",
    help: "frontend: largest file POST /v1/files takes; larger ones get 413 (default 104857600, 100 MiB)",
  },
  "max-body-bytes": {
    type: "integer",
    env: "ARMATURE_MAX_BODY_BYTES",
    help: "largest request body accepted; larger ones get 413 (default 8388608, 8 MiB)",
  },
  "max-kv-exports": {
    type: "integer",
    env: "ARMATURE_MAX_KV_EXPORTS",
    help: "prefill worker: exported prompts held for decode workers at once; more are prefilled on the decode worker (default 64)",
  },
  "max-kv-export-bytes": {
    type: "integer",
    env: "ARMATURE_MAX_KV_EXPORT_BYTES",
    help: "prefill worker: bytes of exported KV held at once (default 1073741824, 1 GiB)",
  },
  "min-shared-free-bytes": {
    type: "integer",
    env: "ARMATURE_MIN_SHARED_FREE_BYTES",
    help: "prefill worker: free space an export must leave in the shared folder, /dev/shm (default 16777216, 16 MiB)",
  },
  "request-timeout": {
    type: "number",
    env: "ARMATURE_REQUEST_TIMEOUT",
    help: "seconds a request may take, waiting in the queue included; then 504, or an error event on a stream (default 600; 0: none)",
  },
  "tool-call-parser": {
    type: "string",
    env: "ARMATURE_TOOL_CALL_PARSER",
    help: "how tool calls are read from answers to tool_choice auto: hermes | llama3_json | mistral | pythonic (default: the one the model's chat template points to)",
    choices: TOOL_CALL_PARSER_NAMES,
  },
  "reasoning-parser": {
    type: "string",
    env: "ARMATURE_REASONING_PARSER",
    help: "split chat answers' <think> text into reasoning_content: deepseek_r1 | qwen3 (default: none)",
    choices: REASONING_PARSER_NAMES,
  },
  "api-key": {
    type: "string",
    multiple: true,
    env: "ARMATURE_API_KEY",
    help: "a key clients must send (Authorization: Bearer KEY or x-api-key); repeatable, the variable comma-separated",
  },
  "api-keys-file": {
    type: "string",
    env: "ARMATURE_API_KEYS_FILE",
    help: "YAML/JSON list of {key, name, requests_per_minute, tokens_per_minute, max_concurrent, models}; SIGHUP reloads it",
  },
  "metrics-require-key": {
    type: "boolean",
    env: "ARMATURE_METRICS_REQUIRE_KEY",
    help: "/metrics asks for an API key too (default: open, like /health and /live)",
  },
  "tls-cert": {
    type: "string",
    env: "ARMATURE_TLS_CERT",
    help: "PEM certificate (then intermediates): serve HTTPS on --port (with --tls-key); SIGHUP rereads it",
  },
  "tls-key": { type: "string", env: "ARMATURE_TLS_KEY", help: "PEM private key of --tls-cert, unencrypted" },
  "tls-ca": {
    type: "string",
    env: "ARMATURE_TLS_CA",
    help: "PEM CA of client certificates: every client must present one signed by it (mutual TLS)",
  },
  engine: {
    type: "string",
    env: "ARMATURE_ENGINE",
    help: "llamacpp | mocker | llama-server | vllm | sglang | trtllm (default llamacpp); llama-server, vllm, sglang, trtllm: drive the unmodified servers of --engine-url",
    choices: ["llamacpp", "mocker", "llama-server", "vllm", "sglang", "trtllm"],
  },
  "engine-url": {
    type: "string",
    env: "ARMATURE_ENGINE_URL",
    multiple: true,
    help: "llama-server, vllm, sglang, trtllm: the URL of an engine server, one worker each (repeatable; comma-separated in the variable)",
  },
  "prefill-engine-url": {
    type: "string",
    env: "ARMATURE_PREFILL_ENGINE_URL",
    multiple: true,
    help: "vllm, sglang: the URL of an engine server that prefills for the --engine-url ones (repeatable; vLLM with a KV connector such as NixlConnector, SGLang in --disaggregation-mode prefill)",
  },
  "kv-events-endpoint": {
    type: "string",
    env: "ARMATURE_KV_EVENTS_ENDPOINT",
    multiple: true,
    help: "vllm, sglang, trtllm: the ZMQ KV event publisher of each --engine-url, in the same order, e.g. tcp://10.0.0.5:5557; trtllm also http://HOST:PORT/kv_cache_events, its pull route (absent: approximate routing)",
  },
  "kv-events-replay-endpoint": {
    type: "string",
    env: "ARMATURE_KV_EVENTS_REPLAY_ENDPOINT",
    multiple: true,
    help: "vllm, sglang, trtllm: the ZMQ replay socket of each --kv-events-endpoint, in the same order (absent: missed batches are counted, not fetched)",
  },
  "engine-wait": {
    type: "number",
    env: "ARMATURE_ENGINE_WAIT",
    help: "llama-server, vllm, sglang, trtllm: seconds to wait at start for each engine server's GET /health (default 60)",
  },
  model: {
    type: "string",
    multiple: true,
    env: "ARMATURE_MODEL",
    help: "path of a GGUF model (default: the generated tiny model); PATH=NAME serves it as NAME; llamacpp: repeatable, --workers workers per model; llama-server: the GGUF it runs, read for its tokenizer (default: its /props model_path)",
  },
  lora: {
    type: "string",
    multiple: true,
    env: "ARMATURE_LORA",
    help: "llamacpp: NAME=PATH, a LoRA adapter GGUF each worker serves beside the model; llama-server: the name of the adapter it loaded from PATH (default: the file's name); sglang: the name of one it loaded (--lora-paths NAME=PATH); trtllm: NAME=PATH, an adapter folder on the engine's host that it loads when asked; clients name it as their model (repeatable; one --model only)",
  },
  "max-loras": {
    type: "integer",
    env: "ARMATURE_MAX_LORAS",
    help: "llamacpp: LoRA adapters with a llama.cpp context at once per worker (default 1; the least recently used idle one gives way)",
  },
  tokenizer: {
    type: "string",
    env: "ARMATURE_TOKENIZER",
    help: "llama-server, vllm, sglang, trtllm: the model's Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json, chat template), instead of a GGUF --model",
  },
  "model-name": { type: "string", env: "ARMATURE_MODEL_NAME", help: "name clients use in 'model'" },
  workers: { type: "integer", env: "ARMATURE_WORKERS", help: "number of workers (default 1)" },
  "frontend-processes": {
    type: "integer",
    env: "ARMATURE_FRONTEND_PROCESSES",
    help: "armature frontend: HTTP processes sharing the port, each with its own router replica (default 1)",
  },
  "block-size": { type: "integer", env: "ARMATURE_BLOCK_SIZE", help: "tokens per KV block (default 16 llamacpp, 64 mocker)" },
  router: {
    type: "string",
    env: "ARMATURE_ROUTER",
    help: "kv | round-robin | random | least-loaded | remote (an armature router process; default kv when workers publish KV events)",
    choices: routerNames,
  },
  "speedup-ratio": { type: "number", env: "ARMATURE_SPEEDUP_RATIO", help: "mocker: divide modelled times by this (default 1)" },
  "scheduling-policy": {
    type: "string",
    env: "ARMATURE_SCHEDULING_POLICY",
    help: "mocker: fcfs (default) or priority (vLLM's --scheduling-policy: waiting requests by priority, the least urgent preempted); vllm: priority passes each request's priority to a vLLM started with --scheduling-policy priority",
    choices: SCHEDULING_POLICIES,
  },
  "timing-profile": {
    type: "string",
    env: "ARMATURE_TIMING_PROFILE",
    help: "mocker: JSON timing profile instead of the polynomial model",
  },
  "busy-decode-blocks": {
    type: "number",
    env: "ARMATURE_BUSY_DECODE_BLOCKS",
    help: "a worker is busy above this fraction of its KV blocks in use (default 1.0)",
  },
  "busy-prefill-frac": {
    type: "number",
    env: "ARMATURE_BUSY_PREFILL_FRAC",
    help: "a worker is busy above this many times its max batched tokens waiting to prefill (default 10)",
  },
  "busy-sequences-frac": {
    type: "number",
    env: "ARMATURE_BUSY_SEQUENCES_FRAC",
    help: "a worker is busy once the requests it runs or holds reach this many times its sequences (default 1.0); later ones wait at the router, by priority",
  },
  "priority-reserve": {
    type: "number",
    env: "ARMATURE_PRIORITY_RESERVE",
    help: "share of each worker's sequences kept for requests of priority 0 or lower: deferred ones (above 0) wait once the rest are taken (default 0)",
  },
  "migration-limit": {
    type: "integer",
    env: "ARMATURE_MIGRATION_LIMIT",
    help: "times a request moves to another worker when its worker fails mid-stream (default 3)",
  },
  bus: {
    type: "string",
    env: "ARMATURE_BUS",
    help: "worker/frontend: NATS for requests and events, nats://[USER:PASSWORD@|TOKEN@]HOST:PORT (tls://… for TLS)",
  },
  "bus-creds": { type: "string", env: "ARMATURE_BUS_CREDS", help: "NATS .creds file (user JWT and NKey seed)" },
  "bus-token": { type: "string", env: "ARMATURE_BUS_TOKEN", help: "NATS token (instead of one in the --bus URL)" },
  "bus-user": { type: "string", env: "ARMATURE_BUS_USER", help: "NATS user (instead of one in the --bus URL)" },
  "bus-password": { type: "string", env: "ARMATURE_BUS_PASSWORD", help: "NATS password of --bus-user" },
  "bus-tls-ca": { type: "string", env: "ARMATURE_BUS_TLS_CA", help: "PEM CA of nats-server's certificate; turns TLS on" },
  "bus-tls-cert": { type: "string", env: "ARMATURE_BUS_TLS_CERT", help: "PEM client certificate for NATS (with --bus-tls-key)" },
  "bus-tls-key": { type: "string", env: "ARMATURE_BUS_TLS_KEY", help: "PEM key of --bus-tls-cert" },
  discovery: {
    type: "string",
    env: "ARMATURE_DISCOVERY",
    help: "worker/frontend: etcd for discovery, etcd://[USER:PASSWORD@]HOST:PORT (etcds://… for TLS)",
  },
  "discovery-user": { type: "string", env: "ARMATURE_DISCOVERY_USER", help: "etcd user (instead of one in the --discovery URL)" },
  "discovery-password": { type: "string", env: "ARMATURE_DISCOVERY_PASSWORD", help: "etcd password of --discovery-user" },
  "discovery-tls-ca": { type: "string", env: "ARMATURE_DISCOVERY_TLS_CA", help: "PEM CA of etcd's certificate; turns TLS on" },
  "discovery-tls-cert": { type: "string", env: "ARMATURE_DISCOVERY_TLS_CERT", help: "PEM client certificate for etcd" },
  "discovery-tls-key": { type: "string", env: "ARMATURE_DISCOVERY_TLS_KEY", help: "PEM key of --discovery-tls-cert" },
  "progress-timeout-ms": {
    type: "integer",
    env: "ARMATURE_PROGRESS_TIMEOUT_MS",
    help: "frontend/router: a worker that sends heartbeats but no token for this long is taken for stuck; the request moves (default 60000)",
  },
  "kv-events": {
    type: "string",
    env: "ARMATURE_KV_EVENTS",
    help: "on | off: off makes the kv router predict caches from its own decisions (approximate mode)",
    choices: ["on", "off"],
  },
  "router-queue-size": {
    type: "integer",
    env: "ARMATURE_ROUTER_QUEUE_SIZE",
    help: "requests that may wait while every worker is busy; more get 503 (default 1024)",
  },
  sequences: {
    type: "integer",
    env: "ARMATURE_SEQUENCES",
    help: "concurrent sequences per worker: llamacpp (default 4) and mocker (default 256); an engine server sets its own",
  },
  threads: {
    type: "integer",
    env: "ARMATURE_THREADS",
    help: "llamacpp: CPU threads per worker (default: physical cores less one for the event loop, shared by this process's workers; 1 on a GPU)",
  },
  gpu: {
    type: "string",
    env: "ARMATURE_GPU",
    help: "llamacpp: auto | cuda | vulkan | off: the llama.cpp build that runs (default auto: a GPU build where this machine has a GPU, else the CPU)",
    choices: ["auto", "cuda", "vulkan", "off"],
  },
  "gpu-layers": {
    type: "string",
    env: "ARMATURE_GPU_LAYERS",
    help: "llamacpp: layers offloaded to the GPU, a count or max (default max on a GPU)",
  },
  "batch-size": {
    type: "integer",
    env: "ARMATURE_BATCH_SIZE",
    help: "llamacpp: tokens evaluated in one step at most (default 512, or --context-size if smaller)",
  },
  "flash-attention": {
    type: "string",
    env: "ARMATURE_FLASH_ATTENTION",
    help: "llamacpp: auto | on | off (default auto: where the model and build support it)",
    choices: ["auto", "on", "off"],
  },
  "kv-cache-type": {
    type: "string",
    env: "ARMATURE_KV_CACHE_TYPE",
    help: "llamacpp: f16 | q8_0, the KV cache's element type (default f16; q8_0 needs --flash-attention on)",
    choices: ["f16", "q8_0"],
  },
  "context-size": {
    type: "integer",
    env: "ARMATURE_CONTEXT_SIZE",
    help: "tokens per sequence (default 2048 llamacpp, 32768 mocker and trtllm; the other engine servers say their own)",
  },
  "log-level": { type: "string", env: "ARMATURE_LOG_LEVEL", help: "debug | info | warn | error | silent (default info)" },
  "otlp-endpoint": {
    type: "string",
    env: "ARMATURE_OTLP_ENDPOINT",
    help: "export request spans with OTLP/HTTP to this URL, e.g. http://localhost:4318 (/v1/traces added to a bare URL) (default off)",
  },
  prefill: {
    type: "integer",
    env: "ARMATURE_PREFILL",
    help: "serve: prefill workers; above 0 splits prefill from decode (default 0)",
  },
  decode: {
    type: "integer",
    env: "ARMATURE_DECODE",
    help: "serve: decode workers beside the prefill workers (default --workers)",
  },
  role: {
    type: "string",
    env: "ARMATURE_ROLE",
    help: "worker: aggregated | prefill | decode (default aggregated)",
    choices: ["aggregated", "prefill", "decode"],
  },
  "disagg-threshold": {
    type: "integer",
    env: "ARMATURE_DISAGG_THRESHOLD",
    help: "prompts with fewer uncached tokens are prefilled on the decode worker (default 0: always split)",
  },
  "disagg-max-prefill-queue": {
    type: "integer",
    env: "ARMATURE_DISAGG_MAX_PREFILL_QUEUE",
    help: "prefill on the decode worker while prefill workers hold this many requests each (default unlimited)",
  },
  "kv-overlap-weight": {
    type: "number",
    env: "ARMATURE_KV_OVERLAP_WEIGHT",
    help: "kv router: weight of prefill work against decode load in the cost (default 4; Dynamo's is 1)",
  },
  "kv-exclusive-factor": {
    type: "number",
    env: "ARMATURE_KV_EXCLUSIVE_FACTOR",
    help: "kv router: a worker's cached blocks that no other worker holds count this many times the overlap weight (default 8; 1 is Dynamo's cost)",
  },
  "router-temperature": {
    type: "number",
    env: "ARMATURE_ROUTER_TEMPERATURE",
    help: "kv router: above 0, pick a worker by a softmax over the costs at this temperature instead of the cheapest (default 0, Dynamo's)",
  },
  "lower-tier-weight": {
    type: "number",
    env: "ARMATURE_LOWER_TIER_WEIGHT",
    help: "kv router: what a block on a worker's host tier saves of prefill, against 1 on its device (default 0.8)",
  },
  "kv-blocks": {
    type: "integer",
    env: "ARMATURE_KV_BLOCKS",
    help: "mocker: device KV blocks per worker (default 16384, Dynamo's mocker)",
  },
  "host-kv-blocks": {
    type: "integer",
    env: "ARMATURE_HOST_KV_BLOCKS",
    help: "mocker: host-tier KV blocks per worker, a write-through copy evicted prefixes come back from (default 0: none)",
  },
  "host-gbps": {
    type: "number",
    env: "ARMATURE_HOST_GBPS",
    help: "mocker: host-to-device copy bandwidth for onboarding, GB/s (default 25)",
  },
  "disk-kv-blocks": {
    type: "integer",
    env: "ARMATURE_DISK_KV_BLOCKS",
    help: "mocker: disk-tier KV blocks per worker; blocks used twice go there, evicted prefixes come back (default 0: none)",
  },
  "disk-gbps": {
    type: "number",
    env: "ARMATURE_DISK_GBPS",
    help: "mocker: disk-to-device read bandwidth for onboarding, GB/s (default 5, an NVMe drive)",
  },
  "kv-host-bytes": {
    type: "string",
    env: "ARMATURE_KV_HOST_BYTES",
    help: "llamacpp: host-memory KV tier (G2) per worker, e.g. 2GiB; evicted prefixes come back from it (default 0: none)",
  },
  "kv-disk-dir": {
    type: "string",
    env: "ARMATURE_KV_DISK_DIR",
    help: "llamacpp: folder of the disk KV tier (G3); worker N keeps worker-N/ in it, found again after a restart",
  },
  "kv-disk-bytes": {
    type: "string",
    env: "ARMATURE_KV_DISK_BYTES",
    help: "llamacpp: disk KV tier budget per worker, e.g. 20GiB (default 8GiB with --kv-disk-dir)",
  },
  "kv-object-store": {
    type: "string",
    env: "ARMATURE_KV_OBJECT_STORE",
    help: "llamacpp: object KV tier (G4) shared by the model's workers: dir:///path | s3://bucket?endpoint=URL&region=R | nats://bucket (on --bus)",
  },
  "kv-disk-filter": {
    type: "string",
    env: "ARMATURE_KV_DISK_FILTER",
    help: "on | off: on writes a block to the disk tier only once it was used twice (default on)",
    choices: ["on", "off"],
  },
  "kv-offload": {
    type: "string",
    env: "ARMATURE_KV_OFFLOAD",
    help: "llamacpp: as-filled copies a request's KV blocks down the tiers once its prompt is evaluated and as decoding fills more; at-end only when it ends (default as-filled)",
    choices: ["as-filled", "at-end"],
  },
  ...plannerSettings,
  "durable-kv-events": {
    type: "string",
    env: "ARMATURE_DURABLE_KV_EVENTS",
    help: "worker/frontend/router: on keeps KV events in JetStream (nats-server -js) for routers that start late",
    choices: ["on", "off"],
  },
  "disagg-max-transfer-ms": {
    type: "number",
    env: "ARMATURE_DISAGG_MAX_TRANSFER_MS",
    help: "prefill on the decode worker when moving the prompt's KV would take longer (modelled, ms; default unlimited)",
  },
  "transfer-host": {
    type: "string",
    env: "ARMATURE_TRANSFER_HOST",
    help: "worker: address the KV transfer agent listens on (default 127.0.0.1)",
  },
  "transfer-advertise-host": {
    type: "string",
    env: "ARMATURE_TRANSFER_ADVERTISE_HOST",
    help: "worker: address peers dial for KV bytes, when it differs from --transfer-host",
  },
  "transfer-secret": {
    type: "string",
    env: "ARMATURE_TRANSFER_SECRET",
    help: "worker: secret (32+ chars, same on every worker) the KV transfer port checks; required beyond loopback (serve: random)",
  },
};

export function serveUsage(): string {
  const lines = Object.entries(serveSettings).map(([flag, s]) => `  --${flag.padEnd(24)} ${s.help}  [${s.env}]`);
  return [
    "usage: armature serve [flags]",
    "",
    ...lines,
    `  --${"config".padEnd(24)} JSON file whose keys are the flag names  [ARMATURE_CONFIG]`,
  ].join("\n");
}

/** A refusal of a serve setting, naming the flag and its environment variable. */
export function configError(flag: string, problem: string): ArmatureError {
  const setting = serveSettings[flag] as Setting;
  return new ArmatureError("CONFIG_INVALID", `--${flag} (${setting.env}) ${problem}`);
}
