export type { AzureConversionOptions, AzureTraceRow } from "./azure-trace.js";
export { azureRowsToTrace, convertAzureTrace, parseAzureCsv } from "./azure-trace.js";
export type { LoadShape, RateStep } from "./load-shape.js";
export { LOAD_SHAPE_KINDS, parseSteps, peakRate, poissonArrivals, rateAt, validateLoadShape } from "./load-shape.js";
export { blockCount, formatMooncakeLine, formatMooncakeTrace, MOONCAKE_BLOCK_SIZE } from "./mooncake-jsonl.js";
export type {
  CompiledSyntheticTraceOptions,
  PriorityShare,
  SyntheticRequest,
  SyntheticTraceOptions,
} from "./synthetic-trace.js";
export { compileSyntheticTraceOptions, generateSyntheticTrace, writeSyntheticTrace } from "./synthetic-trace.js";
