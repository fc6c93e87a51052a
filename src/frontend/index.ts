export type { ApiKeySpec } from "./access/index.js";
export { AccessControl, apiKeysFromFlags, joinKeyLists, readApiKeysFile } from "./access/index.js";
export { toHttpError } from "./http-errors.js";
export type { FrontendOptions, TlsOptions } from "./http-server.js";
export { Frontend } from "./http-server.js";
