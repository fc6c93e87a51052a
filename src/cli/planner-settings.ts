import { type PlannerOptions, refusePredictorPeriod } from "../planner/index.js";
import type { Setting } from "./setting.js";

/** The flags that size a planner besides `--planner` and the SLA targets (serve, planner, replay). */
export const plannerSizingFlags = [
  "profile",
  "min-workers",
  "scale-to-zero-after",
  "max-workers",
  "planner-interval",
  "planner-load-interval",
  "predictor",
  "predictor-period",
  "planner-cooldown",
  "planner-up-threshold",
  "planner-down-threshold",
  "planner-quantile",
] as const;

/** The planner's flags of `armature serve` (and, through it, of `armature planner`). */
export const plannerSettings: Record<string, Setting> = {
  planner: {
    type: "string",
    env: "ARMATURE_PLANNER",
    help: "load | sla: size the worker pools to meet --slo-ttft/--slo-itl (sla also predicts load from --profile; docs/planner.md)",
    choices: ["load", "sla"],
  },
  profile: { type: "string", env: "ARMATURE_PROFILE", help: "planner: the worker profile from armature profile (JSON)" },
  "slo-ttft": { type: "number", env: "ARMATURE_SLO_TTFT", help: "planner: time-to-first-token target, ms (default 500)" },
  "slo-itl": { type: "number", env: "ARMATURE_SLO_ITL", help: "planner: inter-token latency target, ms (default 50)" },
  "min-workers": {
    type: "integer",
    env: "ARMATURE_MIN_WORKERS",
    help: "planner: fewest workers per pool (default 1; 0: scale to zero when idle, woken by the next request)",
  },
  "scale-to-zero-after": {
    type: "number",
    env: "ARMATURE_SCALE_TO_ZERO_AFTER",
    help: "planner: with --min-workers 0, idle seconds before the last worker drains (default 600)",
  },
  "max-workers": { type: "integer", env: "ARMATURE_MAX_WORKERS", help: "planner: worker budget, all pools together (default 8)" },
  "planner-interval": {
    type: "number",
    env: "ARMATURE_PLANNER_INTERVAL",
    help: "planner: seconds between throughput-loop decisions (default 60)",
  },
  "planner-load-interval": {
    type: "number",
    env: "ARMATURE_PLANNER_LOAD_INTERVAL",
    help: "planner: seconds between load-loop decisions (default 5)",
  },
  predictor: {
    type: "string",
    env: "ARMATURE_PREDICTOR",
    help: "planner: constant | moving-average | kalman | holt-winters (default kalman)",
  },
  "predictor-period": {
    type: "string",
    env: "ARMATURE_PREDICTOR_PERIOD",
    help: "planner: auto | off | SECONDS: a period in the request rate whose peaks the throughput loop provisions ahead (default auto: found in the rate)",
  },
  "planner-cooldown": {
    type: "number",
    env: "ARMATURE_PLANNER_COOLDOWN",
    help: "planner: seconds a pool holds after a change (default 30)",
  },
  "planner-up-threshold": {
    type: "number",
    env: "ARMATURE_PLANNER_UP_THRESHOLD",
    help: "planner: add a worker when latencies pass this share of their targets (default 1.0, Dynamo's)",
  },
  "planner-down-threshold": {
    type: "number",
    env: "ARMATURE_PLANNER_DOWN_THRESHOLD",
    help: "planner: drain a worker when latencies are below this share of their targets (default 0.8)",
  },
  "planner-quantile": {
    type: "number",
    env: "ARMATURE_PLANNER_QUANTILE",
    help: "planner: the quantile of each worker's live TTFTs and ITLs judged against the targets (default 0.9)",
  },
  "planner-advisory": {
    type: "boolean",
    env: "ARMATURE_PLANNER_ADVISORY",
    help: "planner: decide and report (log, metrics, GET /v1/planner), change nothing",
  },
};

/** `--predictor-period`'s value: `auto`, `off` or seconds (checked against the interval by `compilePlannerOptions`). */
export function parsePredictorPeriod(value: string | undefined): PlannerOptions["predictorPeriod"] {
  if (value === undefined || value === "auto" || value === "off") return value;
  const seconds = Number(value);
  if (value.trim() === "" || !Number.isFinite(seconds)) return refusePredictorPeriod(value);
  return seconds;
}
