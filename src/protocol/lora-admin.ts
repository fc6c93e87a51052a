import { arrayOf, literal, object, type Schema, str, variants } from "./schema.js";

/**
 * Asks a worker to add or remove a LoRA adapter at run time (request plane, `subjects.lora`):
 * `POST /v1/load_lora_adapter` and `/v1/unload_lora_adapter` at a frontend. `path` is a file on the
 * worker's host.
 */
export type LoraAdminRequest =
  | { readonly type: "lora-load"; readonly name: string; readonly path: string }
  | { readonly type: "lora-unload"; readonly name: string };

/** The worker's answer: the adapters it serves now. */
export interface LoraAdapterList {
  readonly type: "lora-adapters";
  readonly names: readonly string[];
}

const adapterName = str({ maxLength: 256 });

export const loraAdminRequestSchema: Schema<LoraAdminRequest> = variants<LoraAdminRequest>({
  "lora-load": object({ type: literal("lora-load"), name: adapterName, path: str({ maxLength: 4096 }) }),
  "lora-unload": object({ type: literal("lora-unload"), name: adapterName }),
});

export const loraAdapterListSchema: Schema<LoraAdapterList> = object({
  type: literal("lora-adapters"),
  names: arrayOf(adapterName, 4096),
});
