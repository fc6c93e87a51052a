export type { ApiKeySpec } from "./access/index.js";
export { AccessControl, apiKeysFromFlags, joinKeyLists, readApiKeysFile } from "./access/index.js";
export type { FinishedRequestTimings, RunningRequestListener } from "./frontend-metrics.js";
export { toHttpError } from "./http-errors.js";
export type { BatchOptions, FrontendOptions, TlsOptions } from "./http-server.js";
export { Frontend } from "./http-server.js";
export { type MigrationOptions, migratingStream } from "./migrating-stream.js";
export { REASONING_PARSER_NAMES, type ReasoningParserName } from "./reasoning/index.js";
export { TOOL_CALL_PARSER_NAMES, type ToolCallParserName } from "./tool-calls/index.js";
