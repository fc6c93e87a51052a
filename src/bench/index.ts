export type { BenchOptions, BenchReport, LoadMode } from "./load-generator.js";
export { runBench } from "./load-generator.js";
export type { RequestTiming } from "./stream-request.js";
export { streamCompletion } from "./stream-request.js";
