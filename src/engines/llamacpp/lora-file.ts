import type { LlamaModel } from "node-llama-cpp";
import { ArmatureError } from "../../protocol/index.js";
import { llamaBindings } from "./llama-runtime.js";

/**
 * Checks that `path` is a LoRA adapter GGUF for `model`'s architecture, as llama.cpp's loader
 * requires (`general.type` `adapter`, `adapter.type` `lora`, the same `general.architecture`),
 * before llama.cpp is asked to load it: its refusals are otherwise a log line and a null pointer.
 * `flag` names the setting that gave the path (`--lora NAME=PATH`, `lora_path`) in the error.
 */
export async function checkLoraFile(path: string, model: LlamaModel, flag: string): Promise<void> {
  let metadata: Record<string, unknown>;
  try {
    const { readGgufFileInfo } = await llamaBindings();
    const info = await readGgufFileInfo(path, { readTensorInfo: false, sourceType: "filesystem", logWarnings: false });
    metadata = info.metadata as unknown as Record<string, unknown>;
  } catch (cause) {
    throw refusal(flag, `cannot read ${path} as a GGUF file: ${(cause as Error).message}`, cause);
  }
  const general = (metadata.general ?? {}) as { type?: unknown; architecture?: unknown };
  const adapter = (metadata.adapter ?? {}) as { type?: unknown };
  if (general.type !== "adapter" || adapter.type !== "lora") {
    const found = general.type === undefined ? "no general.type" : `general.type '${String(general.type)}'`;
    throw refusal(
      flag,
      `${path} is not a LoRA adapter GGUF (${found}; an adapter has general.type 'adapter' and adapter.type 'lora')`,
    );
  }
  const base = (model.fileInfo.metadata as unknown as { general?: { architecture?: unknown } }).general?.architecture;
  if (general.architecture !== base) {
    throw refusal(flag, `${path} adapts a '${String(general.architecture)}' model; this worker's model is '${String(base)}'`);
  }
}

function refusal(flag: string, message: string, cause?: unknown): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `${flag}: ${message}`, { cause, param: "lora_path" });
}
