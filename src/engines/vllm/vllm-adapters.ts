import { ArmatureError } from "../../protocol/index.js";
import type { EngineAdapters } from "../engine.js";
import { engineHttpError } from "../engine-server/engine-server-http.js";

/**
 * The LoRA adapters of a `vllm serve`: those it lists in `GET /v1/models` with the served model as
 * `parent` (its `--lora-modules`) at the start, then those loaded and unloaded through it at run
 * time with its own `POST /v1/load_lora_adapter` and `/v1/unload_lora_adapter` (which vLLM serves
 * when started with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`; its refusal comes back as it said it).
 * A request for an adapter names it as the body's `model`, as vLLM's clients do.
 */
export class VllmAdapters implements EngineAdapters {
  readonly #url: string;
  readonly #names: string[];
  readonly #listeners = new Set<() => void>();

  constructor(url: string, initial: readonly string[]) {
    this.#url = url;
    this.#names = [...initial];
  }

  names(): readonly string[] {
    return this.#names;
  }

  async add(name: string, path: string, flag: string): Promise<void> {
    if (this.#names.includes(name)) {
      throw new ArmatureError("REQUEST_INVALID", `${flag}: an adapter named '${name}' is served already`, { param: "lora_name" });
    }
    await this.#post("/v1/load_lora_adapter", { lora_name: name, lora_path: path }, flag);
    this.#names.push(name);
    for (const listener of this.#listeners) listener();
  }

  async remove(name: string): Promise<void> {
    const at = this.#names.indexOf(name);
    if (at < 0) throw new ArmatureError("MODEL_NOT_FOUND", `no adapter named '${name}' is served here`, { param: "lora_name" });
    await this.#post("/v1/unload_lora_adapter", { lora_name: name }, "lora_name");
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
      throw new ArmatureError("ENGINE_FAILED", `vllm at ${this.#url} did not answer ${path}: ${(cause as Error).message}`, {
        cause,
        retryable: true,
      });
    }
    if (response.ok) return;
    const error = await engineHttpError("vllm", this.#url, response);
    // vLLM already holding the name (loaded before this worker started, say) is what was asked.
    if (path === "/v1/load_lora_adapter" && response.status === 400 && /has already been loaded/.test(error.message)) return;
    // vLLM refuses a path it cannot load, or serves no such route without runtime LoRA updating.
    throw new ArmatureError(response.status < 500 ? "REQUEST_INVALID" : "ENGINE_FAILED", `${flag}: ${error.message}`, {
      cause: error,
      param: response.status < 500 ? "lora_path" : undefined,
    });
  }
}
