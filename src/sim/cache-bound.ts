import type { TraceRequest } from "./trace.js";

/**
 * The hit rate an unlimited cache shared by all workers would reach on a trace: each request hits
 * the longest run of leading hash ids that some earlier request already had, in whole engine
 * blocks, and never its last token (it must be computed to sample from).
 */
export function sharedCacheHitBound(trace: readonly TraceRequest[], traceBlockSize: number, engineBlockSize: number): number {
  // A prefix of hash ids is identified by its last id's position in a trie of seen prefixes.
  const children = new Map<string, Map<number, string>>();
  let nextNode = 1;
  let hit = 0;
  let all = 0;
  for (const request of trace) {
    let node = "0";
    let matched = 0;
    let stillMatching = true;
    for (const id of request.hashIds) {
      let next = children.get(node);
      if (!next) {
        next = new Map();
        children.set(node, next);
      }
      let child = next.get(id);
      if (child === undefined) {
        stillMatching = false;
        child = String(nextNode++);
        next.set(id, child);
      } else if (stillMatching) {
        matched++;
      }
      node = child;
    }
    const cachedTokens = Math.min(matched * traceBlockSize, request.inputLength - 1);
    hit += Math.floor(cachedTokens / engineBlockSize) * engineBlockSize;
    all += request.inputLength;
  }
  return all === 0 ? 0 : hit / all;
}
