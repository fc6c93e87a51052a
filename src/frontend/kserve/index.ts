export { KSERVE_PROTO_OPTIONS, KSERVE_PROTO_PATH, type KserveGrpcOptions, KserveGrpcServer } from "./grpc-server.js";
export type { KserveDeps } from "./llm-run.js";
export { handleKserveRest, isKservePath, sendKserveDenial } from "./rest-routes.js";
