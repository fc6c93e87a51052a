export { Frontend } from "./http-server.js";
export type { FrontendOptions } from "./http-server.js";
export { toHttpError } from "./http-errors.js";
