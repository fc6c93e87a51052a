export { Dashboard } from "./dashboard-routes.js";
export type { FleetBatch, FleetRoute, FleetSnapshot, FleetWorker } from "./fleet-snapshot.js";
export type { Percentiles, RecentRoute, SeriesPoint, WindowSummary } from "./request-window.js";
