export type { DecodeMeasurement, MeasurementContext, PrefillMeasurement } from "./point-measurements.js";
export { interTokenWindow, measureDecode, measurePrefill, median } from "./point-measurements.js";
export { renderProfileChart } from "./profile-chart.js";
export type { ProfileDocument } from "./profile-document.js";
export { formatProfileJson } from "./profile-document.js";
export type { CompiledSweepOptions, ProfileSweepOptions, SweepProgress } from "./profile-sweep.js";
export { compileSweepOptions, defaultSweepAxes, describeSweepProgress, runProfileSweep } from "./profile-sweep.js";
export type { RequestTrace } from "./sweep-requests.js";
export { runOnClock, SweepRequests, traceRequest } from "./sweep-requests.js";
