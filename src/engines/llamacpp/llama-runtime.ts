import { getLlama, type Llama, LlamaLogLevel } from "node-llama-cpp";

let shared: Promise<Llama> | undefined;

/**
 * The process-wide llama.cpp binding. Prebuilt CPU binary only (`build: "never"`: with no network a
 * missing binary must fail loudly, not try to build), and one thread unless told otherwise: the
 * default picks more threads than cores on small machines and decode slows 100x.
 */
export function llamaRuntime(options: { threads?: number } = {}): Promise<Llama> {
  shared ??= getLlama({
    gpu: false,
    build: "never",
    maxThreads: options.threads ?? 1,
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  return shared;
}
