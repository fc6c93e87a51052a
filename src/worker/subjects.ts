/** Event-plane subjects, one place so publishers and subscribers agree. */
export const subjects = {
  kvEvents: (workerId: string): string => `armature.kv_events.${workerId}`,
  allKvEvents: "armature.kv_events.*",
  load: (workerId: string): string => `armature.load.${workerId}`,
  allLoad: "armature.load.*",
  /** Request-plane address where a worker answers KV event queries (recovery after a gap). */
  kvQuery: (workerId: string): string => `${workerId}.kv_events_query`,
} as const;
