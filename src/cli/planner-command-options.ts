import { parseArgs } from "node:util";
import { type CompiledPlannerOptions, compilePlannerOptions, type PlannerLayout } from "../planner/index.js";
import { ArmatureError, type WorkerRole } from "../protocol/index.js";
import { resolveServeOptions, type ServeOptions, serveSettings } from "./serve-options.js";
import { plannerSizingFlags } from "./serve-settings.js";

export const PLANNER_USAGE = `usage: armature planner --bus nats://H:P --discovery etcd://H:P [flags] [-- WORKER FLAGS [-- WORKER FLAGS]]

Sizes the worker pools of a distributed deployment from the traffic reports every armature frontend
publishes (docs/planner.md, "The planner as a process").

  --connector local|kubernetes  how pools change (default local)
  local: everything after -- is the flags of the armature worker processes it starts and drains,
         e.g. -- --engine mocker --speedup-ratio 10. One group: an aggregated pool. Two groups, one
         with --role prefill and one with --role decode: a disaggregated deployment. The workers get
         the planner's --bus and --discovery (and their credentials) through the environment.
  --k8s-deployments ROLE=NAME[,ROLE=NAME]  kubernetes: the Deployment of each pool, e.g.
         aggregated=llama, or prefill=llama-prefill,decode=llama-decode
  --k8s-namespace NS            kubernetes: default the kubeconfig's (in a pod, the service account's)
  --host H                      address of the state and metrics port (default 127.0.0.1)
  --port P                      GET /v1/planner and GET /metrics (default 0: a free port, printed)
  --planner load|sla            the planner's mode (default load)
  --profile F, --slo-ttft MS, --slo-itl MS, --min-workers N, --max-workers N, --planner-interval S,
  --planner-load-interval S, --predictor NAME, --predictor-period auto|off|S, --planner-cooldown S,
  --planner-advisory
                                as for armature serve --planner (docs/planner.md)
  --bus-*, --discovery-*, --log-level   as for the other distributed commands`;

/** The flags of `armature serve` that `armature planner` takes too, with their meaning there. */
const SHARED_FLAGS = new Set([
  "bus",
  "bus-creds",
  "bus-token",
  "bus-user",
  "bus-password",
  "bus-tls-ca",
  "bus-tls-cert",
  "bus-tls-key",
  "discovery",
  "discovery-user",
  "discovery-password",
  "discovery-tls-ca",
  "discovery-tls-cert",
  "discovery-tls-key",
  "log-level",
  "planner",
  "slo-ttft",
  "slo-itl",
  ...plannerSizingFlags,
  "planner-advisory",
]);

/** Flags only `armature planner` has (`host` and `port` mean its own port here). */
const OWN_FLAGS = ["connector", "host", "port", "k8s-namespace", "k8s-deployments"] as const;

/** How the planner process changes the pools. */
export type PlannerConnectorChoice =
  | { readonly kind: "local"; readonly workerArgs: Partial<Record<WorkerRole, readonly string[]>> }
  | { readonly kind: "kubernetes"; readonly deployments: Partial<Record<WorkerRole, string>>; readonly namespace?: string };

/** `armature planner`'s settings, checked. */
export interface PlannerCommandOptions {
  /** `--bus`, `--discovery`, their credentials and `--log-level`, as the other distributed commands read them. */
  readonly serve: ServeOptions;
  readonly planner: CompiledPlannerOptions;
  readonly connector: PlannerConnectorChoice;
  /** The pools, in the order the planner scales them. */
  readonly roles: readonly WorkerRole[];
  readonly host: string;
  readonly port: number;
}

const refuse = (message: string): never => {
  throw new ArmatureError("CONFIG_INVALID", message);
};

/**
 * Reads `armature planner`'s flags: its own (`--connector`, `--host`, `--port`, `--k8s-*`), the planner
 * and plane flags it shares with `serve`, and the worker flag groups after `--`. A flag of `serve`
 * that means nothing to the planner is refused by name (it belongs after `--`).
 */
export function resolvePlannerCommandOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): PlannerCommandOptions {
  const split = argv.indexOf("--");
  const own = split < 0 ? [...argv] : argv.slice(0, split);
  const groups = split < 0 ? [] : splitGroups(argv.slice(split + 1));
  const spec = Object.fromEntries(
    Object.entries(serveSettings).map(([name, s]) => [
      name,
      s.type === "boolean" ? { type: "boolean" as const } : { type: "string" as const, multiple: s.multiple ?? false },
    ]),
  );
  for (const name of OWN_FLAGS) spec[name] = { type: "string" as const, multiple: false };
  let parsed: ReturnType<typeof parseArgs<{ options: typeof spec; tokens: true; strict: true; allowPositionals: false }>>;
  try {
    parsed = parseArgs({ args: own, options: spec, strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    const flag = /'(-[^' ]*)/.exec((error as Error).message)?.[1];
    return refuse(
      flag
        ? `${flag} is not a flag of armature planner (or lacks its value); see armature planner --help`
        : `${(error as Error).message}; see armature planner --help`,
    );
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const passOn: string[] = [];
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    if ((OWN_FLAGS as readonly string[]).includes(token.name)) continue;
    if (token.name === "planner-quantile") {
      refuse(
        "--planner-quantile is not a flag of armature planner: it judges the mean TTFT and ITL the frontends report; the quantile of each worker's live latencies is armature serve's and armature replay's",
      );
    }
    if (!SHARED_FLAGS.has(token.name)) {
      refuse(
        `--${token.name} is not a flag of armature planner: the flags of the workers it starts go after --, e.g. armature planner --bus … --discovery … -- --${token.name} …`,
      );
    }
    passOn.push(token.rawName, ...(token.value !== undefined ? [token.value] : []));
  }
  // The planner's mode defaults to load here; serve needs --planner to turn a planner on at all.
  if (values.planner === undefined && env.ARMATURE_PLANNER === undefined) passOn.push("--planner", "load");
  const serve = resolveServeOptions(passOn, env);
  const connector = chooseConnector(values, groups);
  const roles = connector.kind === "local" ? (Object.keys(connector.workerArgs) as WorkerRole[]) : poolRoles(connector);
  const layout = layoutOf(roles, connector.kind === "local" ? "the worker flag groups after --" : "--k8s-deployments");
  const planner = compilePlannerOptions({ ...serve.planner, layout });
  if (planner.minWorkers === 0) {
    refuse(
      "--min-workers 0 is not served by armature planner yet: its frontends are other processes, which would refuse a model with no worker instead of holding its requests; scale to zero with armature serve --planner",
    );
  }
  return {
    serve,
    planner,
    connector,
    roles: layout === "disaggregated" ? ["prefill", "decode"] : ["aggregated"],
    host: typeof values.host === "string" ? values.host : "127.0.0.1",
    port: portOf(values.port),
  };
}

function chooseConnector(values: Record<string, string | boolean | undefined>, groups: string[][]): PlannerConnectorChoice {
  const kind = values.connector ?? "local";
  if (kind === "local") {
    if (values["k8s-deployments"] !== undefined || values["k8s-namespace"] !== undefined)
      refuse("--k8s-deployments and --k8s-namespace need --connector kubernetes");
    if (groups.length === 0)
      refuse(
        "--connector local needs the flags of the workers it starts after --, e.g. armature planner --bus … --discovery … -- --engine mocker",
      );
    const workerArgs: Partial<Record<WorkerRole, readonly string[]>> = {};
    for (const group of groups) {
      const role = roleOf(group);
      if (workerArgs[role]) refuse(`two worker flag groups after -- have --role ${role}; give one group per role`);
      workerArgs[role] = group;
    }
    return { kind: "local", workerArgs };
  }
  if (kind === "kubernetes") {
    if (groups.length > 0)
      refuse("--connector kubernetes takes no worker flags after --: the Deployments given by --k8s-deployments run the workers");
    const list = values["k8s-deployments"];
    if (typeof list !== "string" || list.trim() === "")
      return refuse("--connector kubernetes needs --k8s-deployments ROLE=NAME[,ROLE=NAME], e.g. aggregated=llama");
    const deployments: Partial<Record<WorkerRole, string>> = {};
    for (const entry of list.split(",")) {
      const [role, name, extra] = entry.trim().split("=");
      if (!isRole(role) || !name || extra !== undefined)
        refuse(`--k8s-deployments: '${entry.trim()}' is not ROLE=NAME with ROLE aggregated, prefill or decode`);
      if (deployments[role as WorkerRole]) refuse(`--k8s-deployments names the ${role} Deployment twice`);
      deployments[role as WorkerRole] = name as string;
    }
    const namespace = values["k8s-namespace"];
    return { kind: "kubernetes", deployments, ...(typeof namespace === "string" ? { namespace } : {}) };
  }
  return refuse(`--connector must be local or kubernetes, got '${String(kind)}'`);
}

function poolRoles(connector: Extract<PlannerConnectorChoice, { kind: "kubernetes" }>): WorkerRole[] {
  return Object.keys(connector.deployments) as WorkerRole[];
}

/** One aggregated pool, or a prefill and a decode pool. */
function layoutOf(roles: readonly WorkerRole[], where: string): PlannerLayout {
  const set = [...roles].sort().join(",");
  if (set === "aggregated") return "aggregated";
  if (set === "decode,prefill") return "disaggregated";
  return refuse(
    `${where}: pools ${[...roles].join(" and ")} are not a deployment the planner sizes; give one aggregated pool (no --role, or --role aggregated), or one prefill and one decode pool`,
  );
}

/** Worker flag groups: `-- A -- B` → [[A], [B]]; empty groups are refused. */
function splitGroups(rest: readonly string[]): string[][] {
  const groups: string[][] = [[]];
  for (const arg of rest) {
    if (arg === "--") groups.push([]);
    else groups[groups.length - 1]?.push(arg);
  }
  if (groups.some((g) => g.length === 0)) refuse("an empty worker flag group after --: give the flags of armature worker");
  return groups;
}

/** The `--role` of a worker flag group (`--role R` or `--role=R`); default aggregated. */
function roleOf(group: readonly string[]): WorkerRole {
  let role: string | undefined;
  for (const [i, arg] of group.entries()) {
    if (arg === "--role") role = group[i + 1];
    else if (arg.startsWith("--role=")) role = arg.slice("--role=".length);
  }
  if (role === undefined) return "aggregated";
  return isRole(role) ? role : refuse(`a worker flag group after -- has --role '${role}': use aggregated, prefill or decode`);
}

function isRole(value: string | undefined): value is WorkerRole {
  return value === "aggregated" || value === "prefill" || value === "decode";
}

function portOf(value: string | boolean | undefined): number {
  if (value === undefined) return 0;
  const port = Number(value);
  if (typeof value !== "string" || !Number.isInteger(port) || port < 0 || port > 65535)
    return refuse(`--port must be a port number from 0 to 65535 (0: a free one), got '${String(value)}'`);
  return port;
}
