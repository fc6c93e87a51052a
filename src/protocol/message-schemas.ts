import type { ActiveSequenceEvent } from "./active-sequences.js";
import {
  type GenerateRequest,
  type GenerateResponse,
  type KvHandoff,
  PRIORITY_LIMIT,
  type SamplingOptions,
  type WireTraceContext,
} from "./generate.js";
import type { KvEvent, KvEventBatch, KvEventsDump, KvEventsQuery, WorkerLoad } from "./kv-events.js";
import type { ModelCard } from "./model-card.js";
import type { RouteAnswer, RouteQuery } from "./route-query.js";
import {
  arrayOf,
  bool,
  int,
  jsonValue,
  literal,
  MessageInvalidError,
  nullable,
  num,
  object,
  optional,
  type Schema,
  str,
  u64,
  variants,
} from "./schema.js";
import { MAX_REPORTED_WORKERS, type TrafficReport } from "./traffic-report.js";
import { type AgentMetadata, backendNames, type TransferDescriptor } from "./transfer-descriptors.js";

/**
 * One schema per message that crosses a plane. Bounds are generous for honest peers and small
 * enough that a hostile one cannot make a reader allocate or walk without limit.
 */

/** Worker, router and agent ids: one NATS subject token. */
const id = str({ maxLength: 128, pattern: /^[A-Za-z0-9_:-]+$/ });
const requestId = str({ maxLength: 256 });
const modelName = str({ maxLength: 256 });
/** Adapters one worker's card may list. */
const MAX_LORAS_PER_WORKER = 4096;
/** Tokens one message may carry: longer than any context a worker serves. */
const MAX_TOKENS = 1 << 21;
const tokenId = int(0, 0x7fffffff);
const sha256 = str({ maxLength: 64, pattern: /^[0-9a-f]{64}$/ });
const tokenIds = arrayOf(tokenId, MAX_TOKENS);
/** KV events one batch or dump may carry (a full default mocker cache is 16384 blocks). */
const MAX_EVENTS = 1 << 20;
const MAX_BLOCKS = 1 << 20;
const storageTier = optional(literal("device", "host_pinned", "disk", "external"));

const kvEvent: Schema<KvEvent> = variants<KvEvent>({
  "kv-block-stored": object({
    type: literal("kv-block-stored"),
    parentHash: nullable(u64),
    blocks: arrayOf(object({ blockHash: u64, tokensHash: u64 }), MAX_BLOCKS),
    blockSize: int(1, 1 << 16),
    storageTier,
  }),
  "kv-block-removed": object({ type: literal("kv-block-removed"), blockHashes: arrayOf(u64, MAX_BLOCKS), storageTier }),
  "kv-cache-cleared": object({ type: literal("kv-cache-cleared") }),
});

export const kvEventBatchSchema: Schema<KvEventBatch> = object({
  type: literal("kv-event-batch"),
  workerId: id,
  eventId: int(1),
  events: arrayOf(kvEvent, MAX_EVENTS),
});

export const kvEventsDumpSchema: Schema<KvEventsDump> = object({
  type: literal("kv-events-dump"),
  workerId: id,
  eventId: int(0),
  events: arrayOf(kvEvent, MAX_EVENTS),
});

/** What a worker answers a KV events query with. */
export const kvRecoverySchema: Schema<KvEventBatch | KvEventsDump> = variants<KvEventBatch | KvEventsDump>({
  "kv-event-batch": kvEventBatchSchema,
  "kv-events-dump": kvEventsDumpSchema,
});

export const kvEventsQuerySchema: Schema<KvEventsQuery> = object({ type: literal("kv-events-query"), fromEventId: int(0) });

export const workerLoadSchema: Schema<WorkerLoad> = object({
  type: literal("worker-load"),
  workerId: id,
  activeRequests: int(),
  waitingRequests: int(),
  activeKvBlocks: int(),
  totalKvBlocks: int(),
  kvCosts: optional(
    object({
      prefillTokensPerSecond: optional(num(0, 1e12)),
      onboardBytesPerSecond: optional(
        object({ host_pinned: optional(num(0, 1e15)), disk: optional(num(0, 1e15)), external: optional(num(0, 1e15)) }),
      ),
    }),
  ),
  residentLoras: optional(arrayOf(modelName, MAX_LORAS_PER_WORKER)),
  kvEventId: optional(int(0)),
});

export const activeSequenceEventSchema: Schema<ActiveSequenceEvent> = object({
  type: literal("active-sequence"),
  routerId: id,
  requestId: str({ maxLength: 512 }),
  workerId: id,
  action: literal("add", "prefill-done", "free"),
  prefillTokens: int(0, MAX_TOKENS),
  decodeBlocks: int(0, MAX_BLOCKS),
});

const sampling: Schema<SamplingOptions> = object({
  temperature: num(0, 100),
  topP: optional(num(0, 1)),
  topK: optional(int(0, 1 << 20)),
  minP: optional(num(0, 1)),
  seed: optional(int(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)),
  presencePenalty: optional(num(-2, 2)),
  frequencyPenalty: optional(num(-2, 2)),
  repetitionPenalty: optional(num(0, 100)),
  logitBias: optional(arrayOf(object({ token: tokenId, bias: num(-100, 100) }), 1 << 20)),
});

/** Most top log-probabilities a token delta carries per token (OpenAI's bound). */
const MAX_TOP_LOGPROBS = 20;
const tokenLogprob = object({
  logprob: num(-1e6, 0),
  top: arrayOf(object({ token: tokenId, logprob: num(-1e6, 0) }), MAX_TOP_LOGPROBS),
});

const descriptor: Schema<TransferDescriptor> = object({
  agent: str({ maxLength: 256 }),
  region: str({ maxLength: 256 }),
  offset: int(),
  length: int(),
  medium: literal("memory", "file", "object"),
  path: optional(str({ maxLength: 4096 })),
});

const handoff: Schema<KvHandoff> = object({
  id: str({ maxLength: 256 }),
  prefillWorkerId: id,
  format: literal("llamacpp-sequence-state", "modelled", "engine-transfer-params"),
  engineParams: optional(jsonObject()),
  descriptors: arrayOf(descriptor, 1024),
  bytes: int(),
  agent: str({ maxLength: 256 }),
  promptTokens: int(0, MAX_TOKENS),
  fromToken: optional(int(0, MAX_TOKENS)),
  wholeBytes: optional(int()),
  firstToken: optional(tokenId),
  cachedTokens: int(0, MAX_TOKENS),
  expiresInMs: int(),
});

/** A version 00 W3C `traceparent`: lowercase hex, neither id all zeros. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * `GenerateRequest.traceContext`; `tracestate` bounded at the 512 characters W3C asks vendors to
 * pass on. A worker checks a dropped one with it alone, to count and report it.
 */
export const wireTraceContextSchema: Schema<WireTraceContext> = object({
  traceparent: str({ maxLength: 55, pattern: TRACEPARENT }),
  tracestate: optional(str({ maxLength: 512 })),
});

/**
 * An advisory field: what `inner` accepts, or undefined when the value is malformed, so its fault
 * does not cost the message (the reader may count it with `inner`).
 */
function droppable<T>(inner: Schema<T>): Schema<T | undefined> {
  return {
    parse(value, path = "") {
      if (value === undefined) return undefined;
      try {
        return inner.parse(value, path);
      } catch (error) {
        if (error instanceof MessageInvalidError) return undefined;
        throw error;
      }
    },
  };
}

export const generateRequestSchema: Schema<GenerateRequest> = object({
  type: literal("generate-request"),
  requestId,
  model: modelName,
  lora: optional(modelName),
  tokenIds,
  sampling,
  maxTokens: int(0, MAX_TOKENS),
  ignoreEos: optional(bool),
  constraint: optional(
    variants<NonNullable<GenerateRequest["constraint"]>>({
      json_object: object({ type: literal("json_object") }),
      json_schema: object({
        type: literal("json_schema"),
        schema: jsonObject(),
      }),
      grammar: object({
        type: literal("grammar"),
        gbnf: str({ maxLength: 1 << 20 }),
        param: str({ maxLength: 64 }),
        regex: optional(str({ maxLength: 1 << 16 })),
        choices: optional(arrayOf(str({ maxLength: 1 << 16 }), 1024)),
      }),
    }),
  ),
  disaggregation: optional(
    variants<NonNullable<GenerateRequest["disaggregation"]>>(
      {
        prefill: object({ phase: literal("prefill"), decodeHeldTokens: optional(int(0, MAX_TOKENS)) }),
        decode: object({ phase: literal("decode"), handoff }),
      },
      "phase",
    ),
  ),
  timeoutMs: optional(num(0)),
  priority: optional(int(-PRIORITY_LIMIT, PRIORITY_LIMIT)),
  logprobs: optional(object({ top: int(0, MAX_TOP_LOGPROBS) })),
  minTokens: optional(int(0, MAX_TOKENS)),
  stopTokenIds: optional(arrayOf(tokenId, 1 << 16)),
  traceContext: droppable(wireTraceContextSchema),
});

/** A JSON object kept whole (a user's JSON schema), bounded in depth. */
function jsonObject(): Schema<Readonly<Record<string, unknown>>> {
  const shape = object({});
  const json = jsonValue(64);
  return {
    parse(value, path = "") {
      shape.parse(value, path);
      return json.parse(value, path) as Record<string, unknown>;
    },
  };
}

export const generateResponseSchema: Schema<GenerateResponse> = variants<GenerateResponse>({
  "token-delta": object({
    type: literal("token-delta"),
    tokenIds: arrayOf(tokenId, MAX_TOKENS),
    logprobs: optional(arrayOf(tokenLogprob, MAX_TOKENS)),
  }),
  "request-end": object({
    type: literal("request-end"),
    finishReason: literal("stop", "length", "cancelled", "error"),
    promptTokens: int(0, MAX_TOKENS),
    completionTokens: int(0, MAX_TOKENS),
    cachedTokens: int(0, MAX_TOKENS),
    hostCachedTokens: optional(int(0, MAX_TOKENS)),
    error: optional(object({ code: str({ maxLength: 64 }), message: str({ maxLength: 4096 }) })),
    kvHandoff: optional(handoff),
    prefilledLocally: optional(bool),
    kvTransfer: optional(object({ backend: str({ maxLength: 32 }), bytes: int(), ms: num(0), savedBytes: optional(int()) })),
  }),
});

export const routeQuerySchema: Schema<RouteQuery> = object({
  type: literal("route-query"),
  model: modelName,
  lora: optional(modelName),
  tokenIds,
  candidates: arrayOf(id, 4096),
  overrides: optional(object({ overlapWeight: optional(num(0)), temperature: optional(num(0)) })),
});

export const routeAnswerSchema: Schema<RouteAnswer> = object({
  type: literal("route-answer"),
  workerId: id,
  overlapBlocks: optional(int(0, MAX_BLOCKS)),
});

const costModel = optional(object({ alphaMs: num(0), bytesPerMs: num(0) }));

export const agentMetadataSchema: Schema<AgentMetadata> = object({
  name: str({ maxLength: 256 }),
  hostId: str({ maxLength: 256 }),
  address: object({ host: str({ maxLength: 256 }), port: int(0, 65535) }),
  costModels: optional(object(Object.fromEntries(backendNames.map((name) => [name, costModel])))),
});

export const modelCardSchema: Schema<ModelCard> = object({
  name: modelName,
  role: literal("aggregated", "prefill", "decode"),
  engine: str({ maxLength: 64 }),
  backend: optional(str({ maxLength: 64 })),
  threads: optional(int(1, 1 << 12)),
  engineUrl: optional(str({ maxLength: 2048 })),
  blockSize: int(1, 1 << 16),
  totalKvBlocks: int(),
  maxBatchedTokens: int(1),
  maxSequences: int(1),
  contextLength: int(1),
  tokenizer: variants<ModelCard["tokenizer"]>(
    {
      gguf: object({ kind: literal("gguf"), path: str({ maxLength: 4096 }), sha256: optional(sha256) }),
      huggingface: object({ kind: literal("huggingface"), path: str({ maxLength: 4096 }), sha256: optional(sha256) }),
      bytes: object({ kind: literal("bytes") }),
    },
    "kind",
  ),
  chatTemplate: optional(str({ maxLength: 1 << 20 })),
  eosTokenIds: arrayOf(tokenId, 1024),
  bosToken: optional(str({ maxLength: 1024 })),
  eosToken: optional(str({ maxLength: 1024 })),
  publishesKvEvents: bool,
  kvBytesPerToken: optional(num(0)),
  kinds: optional(arrayOf(literal("chat", "embeddings", "rerank"), 3)),
  loras: optional(arrayOf(modelName, MAX_LORAS_PER_WORKER)),
});

/** A discovery record as etcd holds it (the runtime's `InstanceRecord`). */
export const instanceRecordSchema = object({
  id,
  role: literal("aggregated", "prefill", "decode"),
  model: modelName,
  card: modelCardSchema,
  transferAgent: optional(agentMetadataSchema),
  startedBy: optional(object({ host: str({ maxLength: 255 }), pid: int(1, 2 ** 31 - 1) })),
});

/** Requests one traffic report may sum: far more than a frontend finishes in a second. */
const MAX_REPORTED_REQUESTS = 1 << 20;
/** The longest latency one request may honestly report: a day, in ms. */
const MAX_LATENCY_MS = 86_400_000;
const reportedCount = int(0, MAX_REPORTED_REQUESTS);
const reportedTokens = int(0, MAX_REPORTED_REQUESTS * MAX_TOKENS);
const reportedMsSum = num(0, MAX_REPORTED_REQUESTS * MAX_LATENCY_MS);
const trafficReportShape = object({
  type: literal("traffic-report"),
  frontendId: id,
  requests: reportedCount,
  arrivals: optional(reportedCount),
  inputTokens: reportedTokens,
  outputTokens: reportedTokens,
  cachedTokens: reportedTokens,
  ttftMsSum: reportedMsSum,
  ttftCount: reportedCount,
  itlMsSum: reportedMsSum,
  itlCount: reportedCount,
  workers: optional(
    arrayOf(
      object({
        workerId: id,
        ttftMsSum: reportedMsSum,
        ttftCount: reportedCount,
        itlMsSum: reportedMsSum,
        itlCount: reportedCount,
      }),
      MAX_REPORTED_WORKERS,
    ),
  ),
});

/** A frontend's traffic report; counts of latencies cannot exceed the requests, cached tokens the prompt tokens. */
export const trafficReportSchema: Schema<TrafficReport> = {
  parse(value, path = "") {
    const report = trafficReportShape.parse(value, path);
    const at = (field: string): string => (path ? `${path}.${field}` : field);
    for (const field of ["ttftCount", "itlCount"] as const) {
      if (report[field] > report.requests)
        throw new MessageInvalidError(at(field), `must not exceed requests (${report.requests}), got ${report[field]}`);
      const perWorker = (report.workers ?? []).reduce((sum, w) => sum + w[field], 0);
      if (perWorker > report[field])
        throw new MessageInvalidError(
          at(`workers`),
          `their ${field}s (${perWorker}) must not exceed the report's (${report[field]})`,
        );
    }
    if (report.cachedTokens > report.inputTokens)
      throw new MessageInvalidError(
        at("cachedTokens"),
        `must not exceed inputTokens (${report.inputTokens}), got ${report.cachedTokens}`,
      );
    return report;
  },
};
