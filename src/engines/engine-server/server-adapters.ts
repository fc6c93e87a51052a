import { ArmatureError } from "../../protocol/index.js";
import type { EngineAdapters } from "../engine.js";
import { engineHttpError } from "./engine-server-http.js";

/** Where an engine server loads and drops adapters at run time, and its name in messages. */
export interface AdapterRoutes {
  readonly kind: string;
  /** Takes `{lora_name, lora_path}`: vLLM's `/v1/load_lora_adapter`, SGLang's `/load_lora_adapter`. */
  readonly load: string;
  /** Takes `{lora_name}`. */
  readonly unload: string;
}

export const VLLM_ADAPTER_ROUTES: AdapterRoutes = {
  kind: "vllm",
  load: "/v1/load_lora_adapter",
  unload: "/v1/unload_lora_adapter",
};
export const SGLANG_ADAPTER_ROUTES: AdapterRoutes = {
  kind: "sglang",
  load: "/load_lora_adapter",
  unload: "/unload_lora_adapter",
};

/**
 * The LoRA adapters of an engine server that loads them itself (vLLM, SGLang): those it served at
 * the start, then those loaded and unloaded through its own routes at run time (vLLM serves them
 * when started with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`; its refusal comes back as it said it).
 * A request for an adapter names it in the engine's own field (vLLM's `model`, SGLang's `lora_path`).
 */
export class ServerAdapters implements EngineAdapters {
  readonly #url: string;
  readonly #routes: AdapterRoutes;
  readonly #names: string[];
  readonly #listeners = new Set<() => void>();

  constructor(url: string, routes: AdapterRoutes, initial: readonly string[]) {
    this.#url = url;
    this.#routes = routes;
    this.#names = [...initial];
  }

  names(): readonly string[] {
    return this.#names;
  }

  async add(name: string, path: string, flag: string): Promise<void> {
    if (this.#names.includes(name)) {
      throw new ArmatureError("REQUEST_INVALID", `${flag}: an adapter named '${name}' is served already`, { param: "lora_name" });
    }
    await this.#post(this.#routes.load, { lora_name: name, lora_path: path }, flag);
    this.#names.push(name);
    for (const listener of this.#listeners) listener();
  }

  async remove(name: string): Promise<void> {
    const at = this.#names.indexOf(name);
    if (at < 0) throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${name}' is served here`, { param: "lora_name" });
    await this.#post(this.#routes.unload, { lora_name: name }, "lora_name");
    this.#names.splice(at, 1);
    for (const listener of this.#listeners) listener();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #post(path: string, body: Record<string, unknown>, flag: string): Promise<void> {
    let response: Response;
    try {
      response = await fetch(`${this.#url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(120_000),
      });
    } catch (cause) {
      throw new ArmatureError(
        "ENGINE_FAILED",
        `${this.#routes.kind} at ${this.#url} did not answer ${path}: ${(cause as Error).message}`,
        {
          cause,
          retryable: true,
        },
      );
    }
    if (response.ok) {
      // SGLang answers `{success, error_message}`; a refusal may come with any status.
      const answer = (await response.json().catch(() => undefined)) as { success?: unknown; error_message?: unknown } | undefined;
      if (answer?.success !== false) return;
      throw new ArmatureError(
        "REQUEST_INVALID",
        `${flag}: ${this.#routes.kind} at ${this.#url} refused it: ${String(answer.error_message ?? "")}`,
        {
          param: "lora_path",
        },
      );
    }
    const error = await engineHttpError(this.#routes.kind, this.#url, response);
    // The engine already holding the name (loaded before this worker started, say) is what was asked.
    if (path === this.#routes.load && response.status === 400 && /already been loaded/.test(error.message)) return;
    // The engine refuses a path it cannot load, or serves no such route (vLLM without runtime LoRA updating).
    throw new ArmatureError(response.status < 500 ? "REQUEST_INVALID" : "ENGINE_FAILED", `${flag}: ${error.message}`, {
      cause: error,
      param: response.status < 500 ? "lora_path" : undefined,
    });
  }
}
