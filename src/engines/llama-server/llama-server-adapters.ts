import { basename } from "node:path";
import { ArmatureError } from "../../protocol/index.js";
import type { EngineAdapters } from "../engine.js";
import { getJson } from "../engine-server/engine-server-http.js";

/** An adapter llama-server loaded at its start, by the index it answers to. */
export interface LlamaServerAdapter {
  readonly name: string;
  readonly id: number;
}

/**
 * The LoRA adapters a `llama-server` loaded at its start (its `--lora FILE`), as `GET /lora-adapters`
 * lists them: `--lora NAME=PATH` names the one whose path is PATH (a server that did not load PATH
 * does not serve NAME; the caller refuses a NAME no server serves); without it each is served under
 * its file's name less `.gguf`. A llama-server without the route (an older build) serves none.
 */
export async function readLlamaServerAdapters(
  url: string,
  named: readonly { readonly name: string; readonly path: string }[],
): Promise<LlamaServerAdapter[]> {
  const listed = await getJson("llama-server", url, "/lora-adapters").catch(() => []);
  const entries = Array.isArray(listed)
    ? listed.flatMap((entry: { id?: unknown; path?: unknown }) =>
        typeof entry?.id === "number" && typeof entry.path === "string" ? [{ id: entry.id, path: entry.path }] : [],
      )
    : [];
  if (named.length === 0) return entries.map(({ id, path }) => ({ id, name: basename(path).replace(/\.gguf$/i, "") }));
  return named.flatMap(({ name, path }) => {
    const entry = entries.find((e) => e.path === path || basename(e.path) === basename(path));
    return entry ? [{ name, id: entry.id }] : [];
  });
}

/**
 * The per-request `lora` list of llama-server's `/completion`: the adapter asked for at scale 1,
 * every other at 0 (an empty list would leave llama-server's own start-up scales in force, which
 * apply its adapters to every request unless it was started with `--lora-init-without-apply`).
 */
export function loraScales(adapters: readonly LlamaServerAdapter[], lora: string | undefined): { id: number; scale: number }[] {
  return adapters.map(({ name, id }) => ({ id, scale: name === lora ? 1 : 0 }));
}

/** The adapters of a llama-server worker: fixed at llama-server's start. */
export function fixedAdapters(adapters: readonly LlamaServerAdapter[]): EngineAdapters {
  const refuse = async (): Promise<never> => {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      "llama-server loads its LoRA adapters at its start (--lora FILE); it cannot load or drop one at run time",
    );
  };
  const names = adapters.map((a) => a.name);
  return { names: () => names, add: refuse, remove: refuse, onChange: () => () => undefined };
}
