export { WorkerHost } from "./worker-host.js";
export type { WorkerHostOptions, WorkerState } from "./worker-host.js";
export { modelCardFor } from "./model-card.js";
export { subjects } from "./subjects.js";
