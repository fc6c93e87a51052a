import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError, type ModelCard } from "../../protocol/index.js";
import type { Router, WorkerView } from "../../router/index.js";
import { toHttpError } from "../http-errors.js";
import { readJsonBody, sendJson } from "../http-io.js";
import { callLoraAdmin } from "../lora-admin-call.js";
import type { RuntimeAdapters } from "../runtime-adapters.js";

export interface LoraRoutesDeps {
  readonly router: Router;
  readonly bodyLimitBytes: number;
  readonly access?: { allowsModel(model: string): boolean } | undefined;
  /** Where the adapters loaded here are kept, so workers that join later load them too. */
  readonly runtimeAdapters?: RuntimeAdapters | undefined;
}

/** How long a load or unload waits for discovery to show every worker's new card. */
const CARD_WAIT_MS = 10_000;

const LOAD_FIELDS = new Set(["lora_name", "lora_path", "load_inplace", "base_model_name"]);
const UNLOAD_FIELDS = new Set(["lora_name", "lora_int_id", "base_model_name"]);

/**
 * vLLM's `POST /v1/load_lora_adapter` (`lora_name`, `lora_path`, `load_inplace`) and
 * `POST /v1/unload_lora_adapter` (`lora_name`): every worker of the model that serves requests
 * (not prefill-only ones) loads the adapter from `lora_path` on its own host, or drops it, and the
 * reply is vLLM's plain-text success line once discovery shows the change, so the next request
 * for the adapter finds it. A load that fails on one worker is undone on the others. With more
 * than one model served, `base_model_name` (armature's field) says which model the adapter adapts.
 */
export async function handleLoraAdmin(
  action: "load" | "unload",
  req: IncomingMessage,
  res: ServerResponse,
  headers: Record<string, string>,
  deps: LoraRoutesDeps,
): Promise<void> {
  try {
    const body = fields(await readJsonBody(req, deps.bodyLimitBytes), action === "load" ? LOAD_FIELDS : UNLOAD_FIELDS);
    const name = requiredString(body, "lora_name");
    if (body.lora_int_id !== undefined) {
      throw invalid("lora_int_id", "adapters here have names only: give lora_name and leave out lora_int_id");
    }
    const base = baseModel(deps.router, body, name, action);
    if (!(deps.access?.allowsModel(base) ?? true) || !(deps.access?.allowsModel(name) ?? true)) {
      throw new ArmatureError("MODEL_NOT_FOUND", `The model \`${base}\` does not exist or you do not have access to it.`, {
        param: "model",
      });
    }
    const workers = deps.router.workers.forModel(base).filter((w) => w.card.role !== "prefill");
    if (action === "load") {
      const path = requiredString(body, "lora_path");
      const inPlace = optionalBool(body, "load_inplace") ?? false;
      const served = workers.filter((w) => w.card.loras?.includes(name));
      if (served.length > 0 && !inPlace) {
        throw invalid("lora_name", `The lora adapter '${name}' has already been loaded.`);
      }
      await Promise.all(served.map((w) => callLoraAdmin(deps.router, w, { type: "lora-unload", name })));
      await loadEverywhere(deps.router, workers, name, path);
      deps.runtimeAdapters?.loaded(base, name, path);
      await cardsShow(deps.router, workers, (card) => card.loras?.includes(name) ?? false);
      sendText(res, `Success: LoRA adapter '${name}' added successfully.`, headers);
    } else {
      const served = workers.filter((w) => w.card.loras?.includes(name));
      if (served.length === 0)
        throw new ArmatureError("MODEL_NOT_FOUND", `The lora adapter '${name}' cannot be found.`, { param: "lora_name" });
      deps.runtimeAdapters?.unloaded(base, name);
      await Promise.all(served.map((w) => callLoraAdmin(deps.router, w, { type: "lora-unload", name })));
      await cardsShow(deps.router, served, (card) => !(card.loras?.includes(name) ?? false));
      sendText(res, `Success: LoRA adapter '${name}' removed successfully.`, headers);
    }
  } catch (error) {
    const http = toHttpError(error);
    sendJson(res, http.status, http.body, headers);
  }
}

/** Which served model the adapter belongs to: the one named, the one that serves it, or the only one. */
function baseModel(router: Router, body: Record<string, unknown>, name: string, action: "load" | "unload"): string {
  const models = router.workers.models().map((card) => card.name);
  const named = body.base_model_name;
  if (named !== undefined) {
    if (typeof named !== "string") throw invalid("base_model_name", "must be a string: the served model the adapter adapts");
    if (!models.includes(named)) {
      throw new ArmatureError("MODEL_NOT_FOUND", `The model \`${named}\` does not exist or you do not have access to it.`, {
        param: "base_model_name",
      });
    }
    return named;
  }
  if (models.includes(name)) throw invalid("lora_name", `'${name}' is the name of a served model`);
  const parent = router.workers.adapterParent(name);
  if (parent !== undefined) return parent;
  if (action === "unload")
    throw new ArmatureError("MODEL_NOT_FOUND", `The lora adapter '${name}' cannot be found.`, { param: "lora_name" });
  if (models.length === 1) return models[0] as string;
  throw invalid(
    "base_model_name",
    models.length === 0
      ? "no model is served yet to load the adapter onto"
      : `more than one model is served (${models.join(", ")}): name the one the adapter adapts`,
  );
}

async function loadEverywhere(router: Router, workers: readonly WorkerView[], name: string, path: string): Promise<void> {
  if (workers.length === 0)
    throw new ArmatureError("ROUTER_NO_WORKER", "no worker serves the model right now", { retryable: true });
  const results = await Promise.allSettled(workers.map((w) => callLoraAdmin(router, w, { type: "lora-load", name, path })));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (!failed) return;
  // All or none: the workers that loaded it drop it again.
  await Promise.allSettled(
    workers
      .filter((_, i) => results[i]?.status === "fulfilled")
      .map((w) => callLoraAdmin(router, w, { type: "lora-unload", name })),
  );
  throw failed.reason;
}

/** Resolves once every one of `workers` registered a card that passes `test` (or left), or after `CARD_WAIT_MS`. */
function cardsShow(router: Router, workers: readonly WorkerView[], test: (card: ModelCard) => boolean): Promise<void> {
  const done = (): boolean =>
    workers.every((w) => {
      const now = router.workers.get(w.id);
      return now === undefined || test(now.card);
    });
  if (done()) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(finish, CARD_WAIT_MS);
    const stop = router.workers.onChange(() => {
      if (done()) finish();
    });
    function finish(): void {
      clearTimeout(timer);
      stop();
      resolve();
    }
  });
}

function fields(body: unknown, known: ReadonlySet<string>): Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new ArmatureError("REQUEST_INVALID", "the body must be a JSON object");
  }
  for (const key of Object.keys(body)) {
    if (!known.has(key)) throw invalid(key, `unknown field '${key}' (this route takes ${[...known].join(", ")})`);
  }
  return body as Record<string, unknown>;
}

function requiredString(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (typeof value !== "string" || value.length === 0 || value.length > 4096) {
    throw invalid(key, `'${key}' is required: a non-empty string`);
  }
  return value;
}

function optionalBool(body: Record<string, unknown>, key: string): boolean | undefined {
  const value = body[key];
  if (value === undefined || typeof value === "boolean") return value;
  throw invalid(key, `'${key}' must be true or false`);
}

function invalid(param: string, message: string): ArmatureError {
  return new ArmatureError("REQUEST_INVALID", message, { param });
}

function sendText(res: ServerResponse, text: string, headers: Record<string, string>): void {
  res.writeHead(200, { ...headers, "content-type": "text/plain; charset=utf-8" });
  res.end(text);
}
