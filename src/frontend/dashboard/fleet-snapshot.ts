import type { StorageTier } from "../../protocol/index.js";
import type { KvIndexer, Router, WorkerView } from "../../router/index.js";
import type { MeterHistory } from "./meter-history.js";
import type { RecentRoute, RequestWindow, SeriesPoint, WindowSummary } from "./request-window.js";

/** Metric names the snapshot reads from the process's own meter (disaggregation and the block manager). */
export const FLEET_METRIC_PREFIXES = ["armature_disagg_", "armature_kv_transfer_", "armature_kvbm_"] as const;

/** One worker as this frontend sees it. */
export interface FleetWorker {
  readonly id: string;
  readonly role: string;
  readonly model: string;
  readonly engine: string;
  /** What the engine computes on (`cpu`, `cuda`, …; the server's kind for a sidecar); null where the card says nothing. */
  readonly backend: string | null;
  /** The engine server a sidecar worker drives; null for engines in the worker's process. */
  readonly engineUrl: string | null;
  /** LoRA adapters it serves, and of those the ones loaded now (as it last published; null: it does not say). */
  readonly loras: { readonly served: readonly string[]; readonly resident: readonly string[] | null };
  /**
   * `busy`: over a busy threshold (new requests wait for another worker); `ready`: takes requests;
   * `unreported`: it has not published its load yet.
   */
  readonly state: "ready" | "busy" | "unreported";
  /** Requests this frontend has in flight on it. */
  readonly requestsInFlight: number;
  /** Requests running and waiting on it, as it last published (all frontends'). */
  readonly activeRequests: number | null;
  readonly waitingRequests: number | null;
  readonly kv: {
    readonly blockSize: number;
    /** Blocks in use by running requests, as it last published, and its capacity. */
    readonly activeBlocks: number | null;
    readonly totalBlocks: number;
    /** `activeBlocks / totalBlocks`. */
    readonly usage: number | null;
    /** Cached blocks the KV router's index holds for it, per tier (null without a KV index). */
    readonly indexedBlocks: Partial<Record<StorageTier, number>> | null;
  };
}

/** A recent routing decision; `prefillWorkerId` and `overlapBlocks` null when there was none or it is unknown. */
export interface FleetRoute extends Omit<RecentRoute, "prefillWorkerId" | "overlapBlocks"> {
  readonly prefillWorkerId: string | null;
  readonly overlapBlocks: number | null;
  /** Share of the prompt the chosen worker held, `overlapBlocks · blockSize / promptTokens` (at most 1). */
  readonly overlapShare: number | null;
}

/** The body of `GET /v1/fleet` (docs/observability.md describes each field). */
export interface FleetSnapshot {
  readonly object: "fleet";
  readonly generatedAt: string;
  readonly frontend: {
    readonly uptimeSeconds: number;
    readonly routerPolicy: string;
    readonly queuedRequests: number;
    readonly requestsInFlight: number;
  };
  readonly workers: readonly FleetWorker[];
  readonly traffic: Omit<WindowSummary, "byWorker" | "cachedShare" | "routerOverlapShare" | "routed" | "disaggregatedPerSecond">;
  readonly kvHitRate: {
    readonly routerOverlap: number | null;
    readonly device: number | null;
    readonly lowerTiers: number | null;
    /** The block manager's hits per looked-up block over the window, per tier (only where it runs in this process). */
    readonly byTier: Readonly<Record<string, number>> | null;
  };
  readonly routing: {
    readonly routed: number;
    readonly byWorker: WindowSummary["byWorker"];
    readonly recent: readonly FleetRoute[];
  };
  readonly disaggregation: {
    readonly disaggregatedPerSecond: number;
    readonly prefillsPerSecond: Readonly<Record<string, number>> | null;
    readonly transferBytesPerSecond: Readonly<Record<string, number>> | null;
    readonly savedBytesPerSecond: Readonly<Record<string, number>> | null;
    readonly localFallbacksPerSecond: Readonly<Record<string, number>> | null;
    readonly meanTransferMs: number | null;
  };
  readonly series: readonly SeriesPoint[];
  readonly planner: unknown;
  /** The caller's newest batches with their progress; null where the Batch API is off. */
  readonly batches: readonly FleetBatch[] | null;
}

/** A batch as the dashboard shows it. */
export interface FleetBatch {
  readonly id: string;
  readonly status: string;
  readonly endpoint: string;
  readonly createdAt: number;
  readonly total: number;
  readonly completed: number;
  readonly failed: number;
}

export interface FleetSources {
  readonly router: Router;
  readonly kvIndexer: KvIndexer | undefined;
  readonly window: RequestWindow;
  readonly history: MeterHistory;
  readonly plannerState: (() => unknown) | undefined;
  /** The caller's newest batches (the Batch API's), when it is on. */
  readonly batches?: (() => Promise<FleetBatch[]>) | undefined;
  readonly startedAt: number;
  readonly requestsInFlight: number;
}

/** How many planner decisions the snapshot carries (the newest). */
const PLANNER_DECISIONS = 10;

/** Builds the fleet snapshot; `allowsModel` (an API key's) hides the models the caller may not use. */
export async function fleetSnapshot(
  sources: FleetSources,
  allowsModel: (model: string) => boolean = () => true,
): Promise<FleetSnapshot> {
  await sources.history.read();
  const { router, window, history } = sources;
  const summary = window.summary();
  const workers = router.workers
    .all()
    .filter((w) => allowsModel(w.card.name))
    .sort((a, b) => a.card.name.localeCompare(b.card.name) || a.card.role.localeCompare(b.card.role) || a.id.localeCompare(b.id))
    .map((w) => fleetWorker(w, router, sources.kvIndexer));
  const { byWorker, cachedShare, routerOverlapShare, routed, disaggregatedPerSecond, ...traffic } = summary;
  const hits = history.rate("armature_kvbm_hit_blocks_total", "tier");
  const lookups = history.rate("armature_kvbm_lookup_blocks_total")?.[""];
  const transferCount = history.rate("armature_kv_transfer_latency_seconds_count")?.[""];
  const transferSum = history.rate("armature_kv_transfer_latency_seconds_sum")?.[""];
  return {
    object: "fleet",
    generatedAt: new Date().toISOString(),
    frontend: {
      uptimeSeconds: Math.round((Date.now() - sources.startedAt) / 1000),
      routerPolicy: router.policyName,
      queuedRequests: router.queuedRequests,
      requestsInFlight: sources.requestsInFlight,
    },
    workers,
    traffic,
    kvHitRate: {
      routerOverlap: routerOverlapShare,
      device: cachedShare?.device ?? null,
      lowerTiers: cachedShare?.lowerTiers ?? null,
      byTier: hits && lookups ? Object.fromEntries(Object.entries(hits).map(([tier, rate]) => [tier, rate / lookups])) : null,
    },
    routing: {
      routed,
      byWorker: Object.fromEntries(Object.entries(byWorker).filter(([id]) => workers.some((w) => w.id === id))),
      recent: window
        .recentRoutes()
        .filter((r) => allowsModel(r.model))
        .map((r) => ({
          ...r,
          prefillWorkerId: r.prefillWorkerId ?? null,
          overlapBlocks: r.overlapBlocks ?? null,
          overlapShare:
            r.overlapBlocks === undefined || r.promptTokens === 0
              ? null
              : Math.min(1, (r.overlapBlocks * r.blockSize) / r.promptTokens),
        })),
    },
    disaggregation: {
      disaggregatedPerSecond,
      prefillsPerSecond: history.rate("armature_disagg_prefill_requests_total", "where"),
      transferBytesPerSecond: history.rate("armature_kv_transfer_bytes_total", "backend"),
      savedBytesPerSecond: history.rate("armature_disagg_kv_bytes_saved_total", "backend"),
      localFallbacksPerSecond: history.rate("armature_disagg_local_prefill_fallbacks_total", "reason"),
      meanTransferMs: transferCount && transferSum !== undefined ? (transferSum / transferCount) * 1000 : null,
    },
    series: window.series(),
    planner: plannerSummary(sources.plannerState?.()),
    batches: sources.batches ? await sources.batches() : null,
  };
}

function fleetWorker(w: WorkerView, router: Router, indexer: KvIndexer | undefined): FleetWorker {
  const load = w.published;
  return {
    id: w.id,
    role: w.card.role,
    model: w.card.name,
    engine: w.card.engine,
    backend: w.card.backend ?? null,
    engineUrl: w.card.engineUrl ?? null,
    loras: { served: w.card.loras ?? [], resident: load?.residentLoras ?? null },
    state: load === undefined ? "unreported" : router.isBusy(w) ? "busy" : "ready",
    requestsInFlight: w.inflight,
    activeRequests: load?.activeRequests ?? null,
    waitingRequests: load?.waitingRequests ?? null,
    kv: {
      blockSize: w.card.blockSize,
      activeBlocks: load?.activeKvBlocks ?? null,
      totalBlocks: w.card.totalKvBlocks,
      usage: load && w.card.totalKvBlocks > 0 ? load.activeKvBlocks / w.card.totalKvBlocks : null,
      indexedBlocks: indexer ? indexer.blocksByTier(w.id) : null,
    },
  };
}

/**
 * The planner's state (`GET /v1/planner`) with only its newest decisions; null without a planner.
 * With a planner per model (`{models: {name: state}}`), one view of them all: the first model's
 * settings, every model's pools and decisions with the pool named `model · pool`.
 */
function plannerSummary(state: unknown): unknown {
  if (state === undefined || state === null || typeof state !== "object") return state ?? null;
  const models = (state as { models?: Record<string, PlannerView> }).models;
  if (models !== undefined) {
    const views = Object.entries(models);
    const pools: Record<string, unknown> = {};
    const decisions: { readonly pool: string; readonly atMs: number }[] = [];
    for (const [model, view] of views) {
      for (const [pool, counts] of Object.entries(view.pools ?? {})) pools[`${model} · ${pool}`] = counts;
      for (const d of view.decisions ?? []) decisions.push({ ...d, pool: `${model} · ${d.pool}` });
    }
    decisions.sort((a, b) => a.atMs - b.atMs);
    return plannerSummary({ ...(views[0]?.[1] ?? {}), pools, decisions });
  }
  if (!Array.isArray((state as { decisions?: unknown }).decisions)) return state;
  const decisions = (state as { decisions: unknown[] }).decisions;
  return { ...state, decisions: decisions.slice(-PLANNER_DECISIONS).reverse() };
}

/** What the dashboard reads of a planner's state. */
interface PlannerView {
  readonly pools?: Record<string, unknown>;
  readonly decisions?: readonly { readonly pool: string; readonly atMs: number }[];
}
