import { ArmatureError, type RouteAnswer, routeQuerySchema, subjects } from "../protocol/index.js";
import type { Registration, Runtime } from "../runtime/index.js";
import type { RoutingPolicy } from "./policy.js";
import type { WorkerSet } from "./worker-set.js";
import type { WorkerView } from "./worker-view.js";

/**
 * The `armature router` service: answers frontends' route queries with its policy (the KV index
 * and the load every frontend books, which reaches it over the event plane). Routers serve one
 * subject as a queue group, so frontends reach whichever is up.
 */
export async function serveRouteQueries(runtime: Runtime, policy: RoutingPolicy, workers: WorkerSet): Promise<Registration> {
  return runtime.requests.serve(subjects.routerService, async function* (payload): AsyncGenerator<RouteAnswer> {
    const query = runtime.invalidMessages.check("route-query", routeQuerySchema, payload, subjects.routerService);
    const known = query.candidates.map((id) => workers.get(id)).filter((w): w is WorkerView => w !== undefined);
    // Workers that joined after this router looked: route among what the frontend sees, by id.
    const candidates = known.length > 0 ? known : query.candidates.map((id) => stubView(id));
    if (candidates.length === 0) throw new ArmatureError("ROUTER_NO_WORKER", `no candidate worker for model ${query.model}`);
    const request = { model: query.model, lora: query.lora, tokenIds: query.tokenIds, overrides: query.overrides };
    const chosen = policy.select(candidates, request);
    policy.onRouted?.(chosen.id, request);
    yield { type: "route-answer", workerId: chosen.id, overlapBlocks: policy.overlapBlocks?.(chosen.id, request) };
  });
}

function stubView(id: string): WorkerView {
  return { id, card: undefined as unknown as WorkerView["card"], inflight: 0, published: undefined };
}
