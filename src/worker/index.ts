export { modelCardFor } from "./model-card.js";
export type { WorkerHostOptions, WorkerState } from "./worker-host.js";
export { WorkerHost } from "./worker-host.js";
