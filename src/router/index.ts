export type { ActiveLoadOptions, WorkerLoadShare } from "./active-load.js";
export { ActiveLoad } from "./active-load.js";
export type { QueueTicket, ShedReason } from "./admission-queue.js";
export type { BasicPolicyName } from "./basic-policies.js";
export {
  basicPolicyNames,
  createBasicPolicy,
  leastLoadedPolicy,
  randomPolicy,
  roundRobinPolicy,
} from "./basic-policies.js";
export { disaggregationMetrics } from "./disaggregation-metrics.js";
export type { ApproximateIndexOptions } from "./kv-index/approximate-index.js";
export { ApproximateIndex } from "./kv-index/approximate-index.js";
export { KvIndexer } from "./kv-index/kv-indexer.js";
export type { ApplyStatus, OverlapScores } from "./kv-index/radix-tree.js";
export { RadixTree } from "./kv-index/radix-tree.js";
export type { KvIndexView, KvPolicyOptions } from "./kv-policy.js";
export { DEFAULT_EXCLUSIVE_FACTOR, DEFAULT_OVERLAP_WEIGHT, kvPolicy } from "./kv-policy.js";
export type { RoutingPolicy } from "./policy.js";
export type { EmbeddingCall, RankingCall } from "./pooling-call.js";
export { EMBEDDING_ROLES } from "./pooling-call.js";
export type { PrefillOutcome, PrefillStageOptions } from "./prefill-stage.js";
export { PrefillStage } from "./prefill-stage.js";
export type { RemoteSelector } from "./remote-selector.js";
export { remoteSelector } from "./remote-selector.js";
export { serveRouteQueries } from "./route-service.js";
export type { BusyThresholds, RoutedCall, RouterOptions } from "./router.js";
export { Router } from "./router.js";
export type { OverheadPhase } from "./router-metrics.js";
export { routerOverheadMetrics, routerQueueMetrics } from "./router-metrics.js";
export { type RoutingStack, type RoutingStackOptions, startRoutingStack } from "./routing-stack.js";
export { WorkerSet } from "./worker-set.js";
export type { RouteRequest, RouterOverrides, WorkerView } from "./worker-view.js";
