import type { RoutingPolicy } from "./policy.js";
import type { WorkerView } from "./worker-view.js";

/** Each worker in turn, in the order of their ids. */
export function roundRobinPolicy(): RoutingPolicy {
  let next = 0;
  return {
    name: "round-robin",
    select(candidates) {
      const sorted = [...candidates].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const chosen = sorted[next % sorted.length] as WorkerView;
      next = (next + 1) % Number.MAX_SAFE_INTEGER;
      return chosen;
    },
  };
}

/** Uniformly at random; `random` is injectable for reproducible tests. */
export function randomPolicy(random: () => number = Math.random): RoutingPolicy {
  return {
    name: "random",
    select(candidates) {
      return candidates[Math.floor(random() * candidates.length)] as WorkerView;
    },
  };
}

/**
 * Fewest requests in flight from this router, then the lowest published KV usage, then the
 * fewest published waiting requests; ties go to the smaller id.
 */
export function leastLoadedPolicy(): RoutingPolicy {
  const score = (w: WorkerView): [number, number, number] => [
    w.inflight,
    w.published ? w.published.activeKvBlocks / Math.max(1, w.published.totalKvBlocks) : 0,
    w.published?.waitingRequests ?? 0,
  ];
  return {
    name: "least-loaded",
    select(candidates) {
      let best = candidates[0] as WorkerView;
      let bestScore = score(best);
      for (const w of candidates.slice(1)) {
        const s = score(w);
        const better =
          s[0] !== bestScore[0]
            ? s[0] < bestScore[0]
            : s[1] !== bestScore[1]
              ? s[1] < bestScore[1]
              : s[2] !== bestScore[2]
                ? s[2] < bestScore[2]
                : w.id < best.id;
        if (better) {
          best = w;
          bestScore = s;
        }
      }
      return best;
    },
  };
}

export const basicPolicyNames = ["round-robin", "random", "least-loaded"] as const;
export type BasicPolicyName = (typeof basicPolicyNames)[number];

export function createBasicPolicy(name: BasicPolicyName): RoutingPolicy {
  switch (name) {
    case "round-robin":
      return roundRobinPolicy();
    case "random":
      return randomPolicy();
    case "least-loaded":
      return leastLoadedPolicy();
  }
}
