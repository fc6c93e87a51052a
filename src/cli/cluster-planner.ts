type Flags = Readonly<Record<string, string | number | boolean>>;

/**
 * The `planner:` section of a cluster file: flags of `armature planner` (names without dashes),
 * and the flags of the workers it starts and drains: `worker:` for one aggregated pool, or
 * `prefill-worker:` and `decode-worker:` for a disaggregated pair. `armature up` runs it with the
 * local connector, on the cluster's bus and discovery.
 */
export type ClusterPlanner = Flags & {
  readonly worker?: Flags;
  readonly "prefill-worker"?: Flags;
  readonly "decode-worker"?: Flags;
};

const WORKER_KEYS = ["worker", "prefill-worker", "decode-worker"] as const;
/** Set by `armature up` itself. */
const RESERVED = ["connector", "bus", "discovery", "k8s-deployments", "k8s-namespace"];

const isMapping = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/** What is wrong with a `planner:` section, or undefined when it can run. */
export function plannerSectionProblem(section: unknown): string | undefined {
  if (!isMapping(section)) return "planner: must be a mapping of planner flags with worker: (the flags of its workers)";
  const reserved = RESERVED.find((key) => key in section);
  if (reserved)
    return `planner: ${reserved} is set by armature up (a local connector on the cluster's bus and discovery); remove it`;
  for (const key of WORKER_KEYS) {
    const worker = section[key];
    if (worker === undefined) continue;
    if (!isMapping(worker)) return `planner: ${key}: must be a mapping of armature worker flags`;
    if ("count" in worker) return `planner: ${key}: count is the planner's to set (min-workers, max-workers); remove it`;
  }
  for (const [key, value] of Object.entries(section)) {
    if (!(WORKER_KEYS as readonly string[]).includes(key) && !["string", "number", "boolean"].includes(typeof value))
      return `planner: ${key} must be a single value (a flag of armature planner)`;
  }
  const split = "prefill-worker" in section || "decode-worker" in section;
  if (split && "worker" in section) return "planner: give worker: (one pool) or prefill-worker: and decode-worker:, not both";
  if (split && !("prefill-worker" in section && "decode-worker" in section))
    return "planner: a disaggregated deployment needs both prefill-worker: and decode-worker:";
  if (!split && !("worker" in section)) return "planner: needs worker: (the flags of the armature worker processes it starts)";
  return undefined;
}

/** `armature planner`'s argv for a checked section: its flags, then one worker flag group per pool. */
export function plannerArgs(section: ClusterPlanner): string[] {
  const flags = (entries: Flags): string[] =>
    Object.entries(entries).flatMap(([key, value]) =>
      // A boolean flag takes no value: true gives the flag, false leaves it out.
      value === true ? [`--${key}`] : value === false ? [] : [`--${key}`, String(value)],
    );
  const own = Object.fromEntries(Object.entries(section).filter(([key]) => !(WORKER_KEYS as readonly string[]).includes(key)));
  const groups = section.worker
    ? [flags(section.worker)]
    : [
        ["--role", "prefill", ...flags(withoutRole(section["prefill-worker"]))],
        ["--role", "decode", ...flags(withoutRole(section["decode-worker"]))],
      ];
  return ["--connector", "local", ...flags(own as Flags), ...groups.flatMap((group) => ["--", ...group])];
}

function withoutRole(entries: Flags | undefined): Flags {
  return Object.fromEntries(Object.entries(entries ?? {}).filter(([key]) => key !== "role"));
}
