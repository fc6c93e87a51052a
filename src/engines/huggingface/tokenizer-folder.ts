import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ArmatureError } from "../../protocol/index.js";

/** What a Hugging Face tokenizer folder holds, as read from its files. */
export interface TokenizerFolder {
  readonly path: string;
  /** `tokenizer.json`: the tokenizer itself (normalizer, pre-tokenizer, model, decoder, added tokens). */
  readonly tokenizerJson: Record<string, unknown>;
  /** `tokenizer_config.json` (empty where the folder has none). */
  readonly config: Record<string, unknown>;
  /** The chat template: `chat_template.jinja`, else `chat_template.json`, else the config's `chat_template`. */
  readonly chatTemplate: string | undefined;
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
  /** `generation_config.json`'s `eos_token_id` (one or a list), where the folder has it. */
  readonly generationEosIds: readonly number[];
}

/**
 * Reads a model's tokenizer folder as `transformers` saves it (`--tokenizer DIR`). A missing or
 * unreadable `tokenizer.json` stops here naming the flag and the file: only fast (JSON) tokenizers
 * are read, not SentencePiece `tokenizer.model` files alone.
 */
export function readTokenizerFolder(path: string, flag = "--tokenizer"): TokenizerFolder {
  const file = (name: string): string => join(path, name);
  const json = (name: string): Record<string, unknown> => {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file(name), "utf8"));
    } catch (cause) {
      throw new ArmatureError("CONFIG_INVALID", `${flag} ${path}: cannot read ${name} (${(cause as Error).message})`, {
        cause,
      });
    }
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new ArmatureError("CONFIG_INVALID", `${flag} ${path}: ${name} is not a JSON object`);
    return value as Record<string, unknown>;
  };
  if (!existsSync(file("tokenizer.json"))) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `${flag} ${path}: no tokenizer.json there (a Hugging Face model folder's fast tokenizer; save it with tokenizer.save_pretrained)`,
    );
  }
  const tokenizerJson = json("tokenizer.json");
  const config = existsSync(file("tokenizer_config.json")) ? json("tokenizer_config.json") : {};
  const generation = existsSync(file("generation_config.json")) ? json("generation_config.json") : {};
  return {
    path,
    tokenizerJson,
    config,
    chatTemplate: chatTemplateOf(path, config, flag),
    bosToken: tokenText(config.bos_token),
    eosToken: tokenText(config.eos_token),
    generationEosIds: idList(generation.eos_token_id),
  };
}

function chatTemplateOf(path: string, config: Record<string, unknown>, flag: string): string | undefined {
  const jinja = join(path, "chat_template.jinja");
  if (existsSync(jinja)) return readFileSync(jinja, "utf8");
  const separate = join(path, "chat_template.json");
  const template = existsSync(separate)
    ? (JSON.parse(readFileSync(separate, "utf8")) as { chat_template?: unknown }).chat_template
    : config.chat_template;
  if (template === undefined || template === null) return undefined;
  if (typeof template === "string") return template;
  // Several named templates: the one named "default" is the chat template (as transformers picks it).
  if (Array.isArray(template)) {
    const named = template.find((t) => (t as { name?: unknown })?.name === "default") as { template?: unknown } | undefined;
    if (typeof named?.template === "string") return named.template;
  }
  throw new ArmatureError(
    "CONFIG_INVALID",
    `${flag} ${path}: chat_template is neither a string nor a list with a "default" template`,
  );
}

/** A special token as tokenizer_config.json writes it: its text, or an AddedToken object with `content`. */
function tokenText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  const content = (value as { content?: unknown } | null | undefined)?.content;
  return typeof content === "string" ? content : undefined;
}

function idList(value: unknown): number[] {
  if (Number.isInteger(value)) return [value as number];
  return Array.isArray(value) ? value.filter((v): v is number => Number.isInteger(v)) : [];
}
