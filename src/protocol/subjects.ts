/**
 * Every subject and request-plane address armature uses, in one place so publishers and
 * subscribers agree.
 */
export const subjects = {
  kvEvents: (workerId: string): string => `armature.kv_events.${workerId}`,
  allKvEvents: "armature.kv_events.*",
  load: (workerId: string): string => `armature.load.${workerId}`,
  allLoad: "armature.load.*",
  /** Request-plane address where a worker answers KV event queries (recovery after a gap). */
  kvQuery: (workerId: string): string => `${workerId}.kv_events_query`,
  /** Request-plane address where a worker hands out its tokenizer bundle (frontends that cannot read its path). */
  tokenizer: (workerId: string): string => `${workerId}.tokenizer`,
  /** Request-plane address where a worker adds and removes LoRA adapters at run time (`lora-load`, `lora-unload`). */
  lora: (workerId: string): string => `${workerId}.lora`,
  /** Request-plane address where a worker answers `embed-request`s (`POST /v1/embeddings`). */
  embed: (workerId: string): string => `${workerId}.embed`,
  /** Request-plane address where a worker answers `rank-request`s (`POST /v1/rerank`, `POST /v1/score`). */
  rank: (workerId: string): string => `${workerId}.rank`,
  /** Router replicas share their bookings here. */
  activeSequences: "armature.active_sequences",
  /** The request-plane address every `armature router` process serves (NATS queue group: one answers). */
  routerService: "armature_router",
  /** Each frontend's traffic report, every second, for `armature planner`. */
  trafficReport: (frontendId: string): string => `armature.traffic.${frontendId}`,
  allTrafficReports: "armature.traffic.*",
} as const;
