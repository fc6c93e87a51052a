export type { AccessControlOptions, AccessDecision, AccessDenial } from "./access-control.js";
export { AccessControl, RequestGrant, sendAccessDenial } from "./access-control.js";
export type { ApiKeySpec } from "./api-keys-file.js";
export { apiKeysFromFlags, joinKeyLists, parseApiKeys, readApiKeysFile } from "./api-keys-file.js";
