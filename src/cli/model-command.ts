import { resolve } from "node:path";
import {
  ensureTinyLora,
  ensureTinyModel,
  ensureTinyRanker,
  writeTinyLora,
  writeTinyModel,
  writeTinyRanker,
} from "../engines/index.js";

export const MODEL_USAGE = "usage: armature model tiny|tiny-lora|tiny-ranker [--out FILE]";

/**
 * `armature model tiny` writes the generated model; `tiny-lora` its LoRA adapter (see
 * `buildTinyLora`); `tiny-ranker` a ranking model made from it (see `buildTinyRanker`).
 */
export async function modelCommand(argv: readonly string[]): Promise<number> {
  const [kind, flag, value] = argv;
  const generated =
    kind === "tiny"
      ? { write: writeTinyModel, ensure: ensureTinyModel }
      : kind === "tiny-lora"
        ? { write: writeTinyLora, ensure: ensureTinyLora }
        : kind === "tiny-ranker"
          ? { write: writeTinyRanker, ensure: ensureTinyRanker }
          : undefined;
  if (!generated || (flag !== undefined && !(flag === "--out" && value)) || argv.length > 3) {
    process.stderr.write(`${MODEL_USAGE}\n`);
    return 2;
  }
  if (flag === "--out" && value) {
    const path = resolve(value);
    await generated.write(path);
    process.stdout.write(`${path}\n`);
    return 0;
  }
  process.stdout.write(`${await generated.ensure()}\n`);
  return 0;
}
