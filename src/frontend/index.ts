export { toHttpError } from "./http-errors.js";
export type { FrontendOptions } from "./http-server.js";
export { Frontend } from "./http-server.js";
