import type { EngineAdapters } from "../engines/index.js";
import { ArmatureError, type LoraAdapterList, loraAdminRequestSchema, subjects } from "../protocol/index.js";
import type { Registration, Runtime } from "../runtime/index.js";

export interface LoraServiceOptions {
  readonly runtime: Runtime;
  readonly workerId: string;
  /** The engine's adapters; undefined where the engine serves none (refused by name). */
  readonly adapters: EngineAdapters | undefined;
  readonly engineKind: string;
}

/**
 * Adds and removes the worker's LoRA adapters at `subjects.lora` (a frontend's
 * `POST /v1/load_lora_adapter` and `/v1/unload_lora_adapter`), answering with the adapters served
 * after the change. The engine's refusals (a file that is not a LoRA GGUF for this model, a name
 * taken or unknown) go back to the caller as invalid requests.
 */
export function serveLoraAdmin(options: LoraServiceOptions): Promise<Registration> {
  const address = subjects.lora(options.workerId);
  return options.runtime.requests.serve(address, (payload) => loraCall(options, address, payload));
}

async function* loraCall(o: LoraServiceOptions, address: string, payload: unknown): AsyncGenerator<LoraAdapterList> {
  const request = o.runtime.invalidMessages.check("lora-admin-request", loraAdminRequestSchema, payload, address);
  const adapters = o.adapters;
  if (!adapters) {
    throw new ArmatureError("NOT_SUPPORTED", `worker ${o.workerId} (engine ${o.engineKind}) does not serve LoRA adapters`);
  }
  try {
    if (request.type === "lora-load") await adapters.add(request.name, request.path, "lora_path");
    else await adapters.remove(request.name);
  } catch (error) {
    // A path the client sent that is not an adapter for this model is the client's to fix (400), not the worker's setup.
    if (error instanceof ArmatureError && error.code === "CONFIG_INVALID") {
      throw new ArmatureError("REQUEST_INVALID", error.message, { cause: error, param: error.param ?? "lora_path" });
    }
    throw error;
  }
  yield { type: "lora-adapters", names: [...adapters.names()] };
}
