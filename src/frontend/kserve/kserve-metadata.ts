import { readFileSync } from "node:fs";
import type { ModelCard } from "../../protocol/index.js";
import type { Router } from "../../router/index.js";

/** The extensions served beside the core protocol: Triton's generate extension (REST). */
export const SERVER_EXTENSIONS = ["generate"] as const;

const VERSION = (JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string })
  .version;

/** `$metadata_server_response`. */
export function serverMetadata(): { name: string; version: string; extensions: string[] } {
  return { name: "armature", version: VERSION, extensions: [...SERVER_EXTENSIONS] };
}

interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  readonly shape: number[];
}

/** The tensors of Triton's LLM convention, as every served model takes and gives them. */
export const MODEL_INPUTS: readonly TensorMetadata[] = [
  { name: "text_input", datatype: "BYTES", shape: [1] },
  { name: "streaming", datatype: "BOOL", shape: [1] },
];
export const MODEL_OUTPUTS: readonly TensorMetadata[] = [
  { name: "text_output", datatype: "BYTES", shape: [1] },
  { name: "finish_reason", datatype: "BYTES", shape: [1] },
];

/**
 * `$metadata_model_response`. No `versions`: a model has one version and none may be asked for
 * (optional in the spec for such servers). The platform says which engine serves it.
 */
export function modelMetadata(card: ModelCard): {
  name: string;
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
} {
  return {
    name: card.name,
    platform: `armature_${card.engine}`,
    inputs: MODEL_INPUTS.map((t) => ({ ...t, shape: [...t.shape] })),
    outputs: MODEL_OUTPUTS.map((t) => ({ ...t, shape: [...t.shape] })),
  };
}

/** The card of `model` when some worker serves it and the caller's key may use it. */
export function servedModel(
  router: Router,
  model: string,
  key: { allowsModel(model: string): boolean } | undefined,
): ModelCard | undefined {
  return router.workers.models().find((card) => card.name === model && (key?.allowsModel(model) ?? true));
}
