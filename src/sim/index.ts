export { sharedCacheHitBound } from "./cache-bound.js";
export type { Summary } from "./latency-stats.js";
export { summarize } from "./latency-stats.js";
export type { ReplayOptions, ReplayPolicy, ReplayResult } from "./replay.js";
export { replay } from "./replay.js";
export type { TraceRequest } from "./trace.js";
export { loadTrace, synthesizeTokens } from "./trace.js";
export type { TtftSeries } from "./ttft-chart.js";
export { renderTtftChart } from "./ttft-chart.js";
