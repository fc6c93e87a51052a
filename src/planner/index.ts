export type { KubernetesConnectorOptions } from "./connectors/kubernetes-connector.js";
export { KubernetesConnector } from "./connectors/kubernetes-connector.js";
export type { LocalConnectorOptions } from "./connectors/local-connector.js";
export { LocalConnector } from "./connectors/local-connector.js";
export type { LocalWorkerExit, LocalWorkerInfo, LocalWorkerState } from "./connectors/local-worker.js";
export { PLANNER_WORKER_ENV, plannerWorkerOrigin } from "./connectors/local-worker.js";
export type { ReplicaCount, ScalingConnector } from "./connectors/scaling-connector.js";
export { SCALING_ROLES } from "./connectors/scaling-connector.js";
export type { SimulatedWorkers, VirtualConnectorOptions, VirtualPoolView } from "./connectors/virtual-connector.js";
export { VirtualConnector } from "./connectors/virtual-connector.js";
export type { HoltWintersSettings } from "./holt-winters-predictor.js";
export { HoltWintersPredictor } from "./holt-winters-predictor.js";
export type { IntervalLoad } from "./interval-load.js";
export { LoadForecaster, normalizeIntervalLoad } from "./interval-load.js";
export type { KalmanSettings } from "./kalman-predictor.js";
export { KalmanPredictor } from "./kalman-predictor.js";
export type { WorkerLatencyEstimate, WorkerLoadSignal } from "./latency-estimate.js";
export { concurrencyAtKvUsage, estimateWorkerLatency } from "./latency-estimate.js";
export type { TrackedRequest } from "./live-latency.js";
export { LiveLatency } from "./live-latency.js";
export type { LoadDecision, LoadLoopSettings, LoadObservation, PoolDecision, PoolName, PoolObservation } from "./load-loop.js";
export { LoadLoop } from "./load-loop.js";
export type { LoadPredictor, PredictorName } from "./load-predictor.js";
export { ConstantPredictor, loadReading, MovingAveragePredictor, PREDICTOR_NAMES } from "./load-predictor.js";
export type { PlannerDecisionRecord, PlannerDeps, PlannerSignals, PlannerState } from "./planner.js";
export { Planner } from "./planner.js";
export type { PlannerLeaseOptions } from "./planner-lease.js";
export { PLANNER_CLAIM, PlannerLease } from "./planner-lease.js";
export { PlannerMetrics } from "./planner-metrics.js";
export type { CompiledPlannerOptions, PlannerLayout, PlannerMode, PlannerOptions } from "./planner-options.js";
export { compilePlannerOptions, PLANNER_DEFAULTS, refusePredictorPeriod } from "./planner-options.js";
export type { CompiledPredictorOptions, PredictorOptions } from "./predictors.js";
export { compilePredictorOptions, createPredictor, isPredictorName } from "./predictors.js";
export type { DecodeGrid, DecodePoint, PrefillPoint, WorkerProfile } from "./profile.js";
export { PROFILE_VERSION, parseProfile } from "./profile.js";
export type { AxisPosition, DecodeEstimate, PrefillEstimate } from "./profile-interpolation.js";
export { interpolateDecode, interpolatePrefill, locateOnAxis } from "./profile-interpolation.js";
export type {
  DecodeOperatingPoint,
  DecodeSizing,
  PrefillSizing,
  ReplicaPlan,
  ReplicaTargets,
  WorkerBound,
} from "./replica-calculator.js";
export { calculateReplicas, decodeOperatingPoint, sizeDecode, sizePrefill } from "./replica-calculator.js";
export { type FinishedRequest, type TrafficSummary, TrafficWindow } from "./traffic-window.js";
