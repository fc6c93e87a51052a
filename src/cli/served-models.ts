import { basename } from "node:path";
import { configError } from "./serve-settings.js";

/** The name a GGUF is served under when none is given: its file name without `.gguf` and a `-vN` suffix. */
export function servedModelName(path: string): string {
  return basename(path)
    .replace(/\.gguf$/i, "")
    .replace(/-v\d+$/, "");
}

/** One model to serve: a GGUF path and, from `PATH=NAME`, the name clients use. */
export interface ModelSpec {
  readonly path: string;
  readonly name: string | undefined;
}

/**
 * `--lora NAME=PATH` (repeatable) and `--max-loras N`: llama.cpp's adapters, for one `--model`
 * (several models' adapters are loaded at run time, naming their model). Refused by name on other
 * engines, whose servers load their own adapters.
 */
export function loraOptions(
  given: readonly string[],
  maxLoras: number | undefined,
  models: readonly string[],
  engine: string,
): { loras: { name: string; path: string }[]; maxLoras: number | undefined } {
  const loraEngines = ["llamacpp", "llama-server", "sglang", "trtllm"];
  const refused =
    maxLoras !== undefined && engine !== "llamacpp"
      ? "max-loras"
      : given.length > 0 && !loraEngines.includes(engine)
        ? "lora"
        : undefined;
  if (refused !== undefined) {
    throw configError(
      refused,
      `is for --engine ${refused === "lora" ? "llamacpp, llama-server, sglang and trtllm" : "llamacpp"}; ${
        engine === "mocker"
          ? "the mocker runs no adapters"
          : engine === "llama-server"
            ? "llama-server applies one adapter per request and holds all it loaded"
            : `${engine} loads its adapters itself (its own flags, or POST /v1/load_lora_adapter to it)`
      }`,
    );
  }
  if (given.length > 0 && models.length > 1) {
    throw configError(
      "lora",
      "adapts one model: with several --model, load each adapter at run time with POST /v1/load_lora_adapter and its base_model_name",
    );
  }
  const loras = given.map((spec) => {
    const at = spec.indexOf("=");
    const name = spec.slice(0, at);
    const path = spec.slice(at + 1);
    if (at < 0 || path === "" || !/^[A-Za-z0-9._:/-]{1,128}$/.test(name)) {
      throw configError("lora", `takes NAME=PATH (a name of letters, digits and ._:/-, then the adapter GGUF), got '${spec}'`);
    }
    return { name, path };
  });
  const names = loras.map((l) => l.name);
  const twice = names.find((name, i) => names.indexOf(name) !== i);
  if (twice !== undefined) throw configError("lora", `names two adapters '${twice}'; give each its own name`);
  return { loras, maxLoras };
}

/**
 * `--model PATH[=NAME]`, repeatable on llama.cpp: `models` every one given, `model` and `modelName`
 * the first's path and name (`--model-name`, or its `=NAME`). Several models need distinct names
 * and no `--model-name`; each is refused naming the flag. A planner sizes each model's pool apart.
 */
export function modelOptions(
  given: readonly string[],
  modelNameFlag: string | undefined,
  engine: string,
): { model: string | undefined; modelName: string | undefined; models: readonly ModelSpec[] } {
  const models = given.map((spec): ModelSpec => {
    const at = spec.lastIndexOf("=");
    if (at < 0) return { path: spec, name: undefined };
    const path = spec.slice(0, at);
    const name = spec.slice(at + 1);
    if (path === "" || !/^[A-Za-z0-9._:/-]{1,128}$/.test(name)) {
      throw configError("model", `takes PATH or PATH=NAME (a name of letters, digits and ._:/-), got '${spec}'`);
    }
    return { path, name };
  });
  if (models.length > 1) {
    if (engine !== "llamacpp")
      throw configError("model", `is given ${models.length} times; several models are served by --engine llamacpp`);
    if (modelNameFlag !== undefined)
      throw configError("model-name", "names one model; with several --model give each its name as PATH=NAME");
    const names = models.map((m) => m.name ?? servedModelName(m.path));
    const twice = names.find((name, i) => names.indexOf(name) !== i);
    if (twice !== undefined) throw configError("model", `serves two models as '${twice}'; give each its own name with PATH=NAME`);
  }
  const first = models[0];
  if (first?.name !== undefined && modelNameFlag !== undefined)
    throw configError("model-name", `and --model ${first.path}=${first.name} both name the model; give one`);
  return { model: first?.path, modelName: modelNameFlag ?? first?.name, models };
}
