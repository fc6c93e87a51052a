import type { ServerResponse } from "node:http";
import type { MetricMeter } from "../../observability/index.js";
import { ArmatureError, type ModelKind } from "../../protocol/index.js";
import type { Router } from "../../router/index.js";
import type { FrontendMetrics } from "../frontend-metrics.js";
import { toHttpError } from "../http-errors.js";
import { sendJson } from "../http-io.js";

/**
 * `GET /v1/models`: every model some worker serves now, then every LoRA adapter with the model it
 * adapts as `parent` (as vLLM lists them), that the caller's API key may use.
 */
export function handleModels(
  res: ServerResponse,
  router: Router,
  startedAt: number,
  headers: Record<string, string>,
  key?: { allowsModel(model: string): boolean },
): void {
  const allowed = (name: string): boolean => key?.allowsModel(name) ?? true;
  const models = router.workers.models().filter((card) => allowed(card.name));
  const adapters = [...router.workers.adapters()].filter(([name]) => allowed(name));
  const data = [
    ...models.map((card) => modelObject(card.name, startedAt, card.kinds)),
    ...adapters.map(([name, parent]) => modelObject(name, startedAt, ["chat"], parent)),
  ];
  sendJson(res, 200, { object: "list", data }, headers);
}

/**
 * OpenAI's model object (also Llama Stack's `OpenAIModel` list entry), with Llama Stack's native
 * `Model` fields beside it (`identifier`, `provider_id`, `type`, `model_type`…), which Llama
 * Stack's `GET /v1/models/{id}` returns: one object satisfies both specs, whose schemas allow
 * other fields. `created` is when this frontend started, as no model here has a release date.
 * `parent`: the model a LoRA adapter adapts, null for a model (vLLM's field); `kinds`: what it
 * serves, `chat` (the generating routes) and `embeddings` where its engine computes them.
 */
function modelObject(
  name: string,
  startedAt: number,
  kinds: readonly ModelKind[] | undefined,
  parent?: string,
): Record<string, unknown> {
  return {
    id: name,
    object: "model",
    created: Math.floor(startedAt / 1000),
    owned_by: "armature",
    parent: parent ?? null,
    kinds: kinds ?? ["chat"],
    identifier: name,
    provider_id: "armature",
    provider_resource_id: name,
    type: "model",
    model_type: "llm",
    metadata: parent === undefined ? {} : { parent },
  };
}

/**
 * `GET /v1/models/{id}`: the model as `GET /v1/models` lists it, or OpenAI's 404 (`model_not_found`)
 * when no worker serves it or the caller's API key may not use it. `id` is the decoded rest of the
 * path, so it may hold `/` (`org/name`).
 */
export function handleModel(
  res: ServerResponse,
  router: Router,
  startedAt: number,
  id: string,
  headers: Record<string, string>,
  key?: { allowsModel(model: string): boolean },
): void {
  const allowed = key?.allowsModel(id) ?? true;
  const card = allowed ? router.workers.models().find((c) => c.name === id) : undefined;
  const parent = allowed && !card ? router.workers.adapterParent(id) : undefined;
  if (!card && parent === undefined) {
    sendJson(
      res,
      404,
      toHttpError(new ArmatureError("MODEL_NOT_FOUND", `The model '${id}' does not exist`, { param: "model" })).body,
      headers,
    );
    return;
  }
  sendJson(res, 200, modelObject(id, startedAt, card?.kinds ?? ["chat"], parent), headers);
}

/**
 * `GET /health`: `healthy` with the instances, or `unhealthy` before any worker registered; a
 * fleet its planner scaled to zero is `healthy` with none (its next request starts a worker);
 * `extra` adds what else the frontend serves (`grpc_port`).
 */
export function handleHealth(
  res: ServerResponse,
  router: Router,
  headers: Record<string, string>,
  extra: Readonly<Record<string, unknown>> = {},
): void {
  const instances = router.workers.all().map((w) => ({
    id: w.id,
    role: w.card.role,
    model: w.card.name,
    engine: w.card.engine,
    ...(w.card.backend ? { backend: w.card.backend } : {}),
    ...(w.card.threads ? { threads: w.card.threads } : {}),
    ...(w.card.engineUrl ? { engine_url: w.card.engineUrl } : {}),
  }));
  const scaledToZero = instances.length === 0 && router.workers.models().length > 0;
  sendJson(
    res,
    200,
    instances.length > 0
      ? { status: "healthy", instances, ...extra }
      : scaledToZero
        ? { status: "healthy", message: "Scaled to zero: the next request starts a worker", instances, ...extra }
        : { status: "unhealthy", message: "No endpoints available", instances, ...extra },
    headers,
  );
}

/** `GET /live`: the process answers. */
export function handleLive(res: ServerResponse, headers: Record<string, string>): void {
  sendJson(res, 200, { status: "live" }, headers);
}

/** `GET /metrics`: Prometheus text format. */
export async function handleMetrics(
  res: ServerResponse,
  meter: MetricMeter,
  metrics: FrontendMetrics,
  router: Router,
  headers: Record<string, string>,
): Promise<void> {
  metrics.refreshWorkers(router.workers.all());
  const body = await meter.render();
  res.writeHead(200, { ...headers, "content-type": meter.contentType, "content-length": Buffer.byteLength(body) });
  res.end(body);
}
