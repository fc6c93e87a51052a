import { readFile } from "node:fs/promises";
import { parse } from "yaml";
import { ArmatureError } from "../protocol/index.js";
import { type ClusterPlanner, plannerSectionProblem } from "./cluster-planner.js";

/** A local deployment, as `armature up` reads it from YAML. */
export interface ClusterFile {
  /** Start a nats-server on this port (with `nats:`), or use `bus:`. */
  readonly nats?: { readonly port: number } | undefined;
  /** Start an etcd on this client port (with `etcd:`), or use `discovery:`. */
  readonly etcd?: { readonly port: number; readonly peerPort?: number } | undefined;
  readonly bus?: string | undefined;
  readonly discovery?: string | undefined;
  /** Flags of `armature frontend` (names without dashes, as in the serve config file). */
  readonly frontend: Readonly<Record<string, string | number | boolean>>;
  /**
   * Worker processes: `count` of each, with flags of `armature worker`. A sidecar worker's entry may
   * carry `engine-command`, the command line of the engine server it drives (its `engine-url`):
   * `up` starts it first and stops it after the worker.
   */
  readonly workers: readonly (Readonly<Record<string, string | number | boolean>> & {
    readonly count?: number;
    readonly "engine-command"?: string;
  })[];
  /** `armature router` processes (`count` of them) with their flags; frontends use them with `router: remote`. */
  readonly routers?: (Readonly<Record<string, string | number | boolean>> & { readonly count?: number }) | undefined;
  /** An `armature planner` that starts and drains workers itself (see `ClusterPlanner`); `workers:` may then be left out. */
  readonly planner?: ClusterPlanner | undefined;
}

/** Reads and checks a cluster file; errors name the file and the key at fault. */
export async function loadClusterFile(path: string): Promise<ClusterFile> {
  let raw: unknown;
  try {
    raw = parse(await readFile(path, "utf8"));
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `${path}: ${(cause as Error).message}`, { cause });
  }
  const file = raw as Partial<ClusterFile> | null;
  const fail = (problem: string): never => {
    throw new ArmatureError("CONFIG_INVALID", `${path}: ${problem}`);
  };
  if (file === null || typeof file !== "object") return fail("expected a mapping with frontend: and workers:");
  if (!file.nats && !file.bus) fail("give nats: {port} to start a nats-server, or bus: nats://HOST:PORT");
  if (!file.etcd && !file.discovery) fail("give etcd: {port} to start an etcd, or discovery: etcd://HOST:PORT");
  if (file.planner !== undefined) {
    const problem = plannerSectionProblem(file.planner);
    if (problem) fail(problem);
  }
  if (!(file.planner && file.workers === undefined) && (!Array.isArray(file.workers) || file.workers.length === 0))
    fail("workers: needs at least one entry (or leave it out and give planner: to start workers)");
  for (const [i, w] of (file.workers ?? []).entries()) {
    if (w === null || typeof w !== "object") fail(`workers[${i}] must be a mapping of worker flags`);
    const command = (w as Record<string, unknown>)["engine-command"];
    if (command === undefined) continue;
    if (typeof command !== "string" || command.trim() === "") fail(`workers[${i}].engine-command must be a command line`);
    if (w["engine-url"] === undefined) fail(`workers[${i}].engine-command needs engine-url: where that engine listens`);
    if ((w.count ?? 1) !== 1)
      fail(`workers[${i}].engine-command starts one engine: give each its own entry, not count: ${w.count}`);
  }
  if (file.routers !== undefined && (file.routers === null || typeof file.routers !== "object" || Array.isArray(file.routers))) {
    fail("routers: must be a mapping of router flags (count: N for several)");
  }
  if (file.frontend?.router === "remote" && !file.routers)
    fail("frontend router: remote needs routers: (armature router processes)");
  return { frontend: {}, workers: [], ...file } as ClusterFile;
}

/** Flags from a mapping (`{ "speedup-ratio": 10 }` → `--speedup-ratio 10`), `count` and `engine-command` left out. */
export function toFlags(entries: Readonly<Record<string, string | number | boolean>>): string[] {
  return Object.entries(entries)
    .filter(([key]) => key !== "count" && key !== "engine-command")
    .flatMap(([key, value]) => [`--${key}`, String(value)]);
}
