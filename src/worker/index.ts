export { modelCardFor } from "./model-card.js";
export { subjects } from "./subjects.js";
export type { WorkerHostOptions, WorkerState } from "./worker-host.js";
export { WorkerHost } from "./worker-host.js";
