import { existsSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";
import type { Llama, LlamaModel } from "node-llama-cpp";
import { ArmatureError } from "../../protocol/index.js";

/** `--gpu`: which llama.cpp build runs the model. */
export type GpuChoice = "auto" | "cuda" | "vulkan" | "off";

/** The backend a loaded llama.cpp build computes on. */
export type LlamaBackend = "cpu" | "cuda" | "vulkan" | "metal";

let shared: { readonly choice: GpuChoice; readonly llama: Promise<Llama> } | undefined;

/**
 * The process-wide llama.cpp binding (one per process: node-llama-cpp's builds share ggml's global
 * state). Prebuilt binaries only (`build: "never"`: with no network a missing binary must fail
 * loudly, not try to build); node-llama-cpp's CUDA and Vulkan builds are its optional dependencies.
 *
 * `gpu` absent (a tokenizer, which needs no backend): whatever binding is loaded, else the CPU one.
 * `auto`: CUDA or Vulkan when this machine has such a device (`/dev/nvidia*`, `/dev/dri/renderD*`)
 * and node-llama-cpp finds a working build for it, else the CPU; a machine with no GPU device skips
 * node-llama-cpp's probing of each GPU build (seconds per start). `cuda` or `vulkan` that cannot load
 * stops the start with a message naming `--gpu`.
 */
export function llamaRuntime(options: { readonly gpu?: GpuChoice } = {}): Promise<Llama> {
  const wanted = options.gpu;
  if (shared && wanted !== undefined && wanted !== "auto" && wanted !== shared.choice) {
    return Promise.reject(
      new ArmatureError(
        "CONFIG_INVALID",
        `--gpu ${wanted}: this process already loaded llama.cpp with --gpu ${shared.choice}; one process runs one llama.cpp build`,
      ),
    );
  }
  if (shared) return shared.llama;
  const choice = wanted ?? "off";
  const gpu = choice === "off" || (choice === "auto" && !hasGpuDevice()) ? false : choice;
  const llama = llamaBindings()
    .then(({ getLlama, LlamaLogLevel }) =>
      getLlama({
        gpu,
        build: "never",
        // Contexts set their own threads (`defaultThreads`); this only lifts node-llama-cpp's cap.
        maxThreads: availableParallelism(),
        logLevel: LlamaLogLevel.error,
        progressLogs: false,
      }),
    )
    .catch((cause: unknown) => {
      shared = undefined;
      throw new ArmatureError(
        "CONFIG_INVALID",
        `--gpu ${choice}: node-llama-cpp has no working ${choice === "auto" ? "" : `${choice} `}llama.cpp build on this machine (${(cause as Error).message}); --gpu off runs on the CPU`,
        { cause },
      );
    });
  shared = { choice, llama };
  return llama;
}

/** The backend of a loaded binding, as `/health` and the model card name it. */
export function backendOf(llama: Llama): LlamaBackend {
  return llama.gpu === false ? "cpu" : llama.gpu;
}

function hasGpuDevice(): boolean {
  if (existsSync("/dev/nvidiactl") || existsSync("/dev/nvidia0")) return true;
  try {
    return readdirSync("/dev/dri").some((name) => name.startsWith("renderD"));
  } catch {
    return false;
  }
}

/**
 * Threads per llama.cpp context when `--threads` is not given: the cores useful for math
 * (node-llama-cpp's `cpuMathCores`: physical cores), never more than `os.availableParallelism()`,
 * less one for the thread node-llama-cpp evaluates on beside the event loop, shared by the
 * `workers` engines of this process; at least 1. On a GPU the CPU only feeds the device: 1 per
 * worker. Measured in docs/benchmarks.md ("Against llama-server, at 1 and 4 streams, by threads"):
 * on 2 cores, 2 threads decode 15× slower than 1, as the spinning threads starve each other.
 */
export function defaultThreads(
  llama: Pick<Llama, "cpuMathCores" | "gpu">,
  workers: number,
  cores = availableParallelism(),
): number {
  if (llama.gpu !== false) return 1;
  const math = Math.min(llama.cpuMathCores, cores);
  return Math.max(1, Math.floor((math - 1) / Math.max(1, workers)));
}

/**
 * The llama.cpp runtime for `gpu` and the GGUF at `modelPath` on it (all layers offloaded unless
 * `gpuLayers` says otherwise). Refuses `gpuLayers` on the CPU and a file llama.cpp cannot load,
 * each naming its flag.
 */
export async function loadModel(options: {
  readonly modelPath: string;
  readonly gpu?: GpuChoice | undefined;
  readonly gpuLayers?: number | "max" | undefined;
}): Promise<{ llama: Llama; backend: LlamaBackend; model: LlamaModel }> {
  const llama = await llamaRuntime({ gpu: options.gpu ?? "auto" });
  const backend = backendOf(llama);
  if (options.gpuLayers !== undefined && backend === "cpu") {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--gpu-layers ${options.gpuLayers}: llama.cpp runs on the CPU here (--gpu ${options.gpu ?? "auto"}), there is no GPU to offload to`,
    );
  }
  try {
    const model = await llama.loadModel({
      modelPath: options.modelPath,
      ...(backend === "cpu" ? {} : { gpuLayers: options.gpuLayers ?? "max" }),
    });
    return { llama, backend, model };
  } catch (cause) {
    throw new ArmatureError(
      "MODEL_LOAD_FAILED",
      `cannot load GGUF model ${options.modelPath}: check the --model path (ARMATURE_MODEL)`,
      {
        cause,
      },
    );
  }
}

type Bindings = typeof import("node-llama-cpp");
let bindings: Bindings | undefined;

/**
 * node-llama-cpp, imported on first use rather than with this folder: frontends, routers and
 * replays import the engines without running llama.cpp, and the bindings take half a second and
 * 40 MB to load. A GGUF tokenizer, a llama.cpp engine or a LoRA file check loads them.
 */
export async function llamaBindings(): Promise<Bindings> {
  bindings ??= await import("node-llama-cpp");
  return bindings;
}

/** The bindings once loaded: for code that runs only with a model that `llamaRuntime` loaded. */
export function loadedLlamaBindings(): Bindings {
  if (!bindings) throw new Error("node-llama-cpp is used before llamaRuntime loaded it");
  return bindings;
}
