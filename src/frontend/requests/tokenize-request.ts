import { type FunctionTool, parseToolRequest } from "../tool-calls/index.js";
import { type ChatMessage, parseMessages } from "./chat-request.js";
import { asObject, invalid, optionalBoolean, requiredString } from "./field-checks.js";
import { detokenizeFields, refuseUnservedFields, tokenizeFields } from "./request-fields.js";

/** A `POST /tokenize` body: text as a completion takes it, or messages as a chat completion renders them. */
export type TokenizeRequest =
  | { readonly kind: "text"; readonly model: string; readonly prompt: string }
  | {
      readonly kind: "chat";
      readonly model: string;
      readonly messages: readonly ChatMessage[];
      readonly addGenerationPrompt: boolean;
      /** Declared tools, rendered by the chat template as a chat completion renders them. */
      readonly tools: readonly FunctionTool[];
    };

export interface DetokenizeRequest {
  readonly model: string;
  readonly tokens: readonly number[];
}

/**
 * Validates a `POST /tokenize` body (vLLM's shape): `prompt` or `messages`, not both;
 * `add_generation_prompt` (default true) goes with `messages` only.
 */
export function parseTokenizeRequest(raw: unknown): TokenizeRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, tokenizeFields);
  const model = requiredString(body, "model");
  const addGenerationPrompt = optionalBoolean(body, "add_generation_prompt");
  const hasMessages = body.messages !== undefined && body.messages !== null;
  if (body.prompt !== undefined && body.prompt !== null) {
    if (hasMessages) throw invalid("messages", "send either 'prompt' or 'messages', not both");
    if (addGenerationPrompt !== undefined) {
      throw invalid("add_generation_prompt", "'add_generation_prompt' applies to 'messages' only; leave it out with 'prompt'");
    }
    if (typeof body.prompt !== "string") throw invalid("prompt", "'prompt' must be a string");
    if (Array.isArray(body.tools) && body.tools.length > 0) {
      throw invalid("tools", "'tools' applies to 'messages' only; leave it out with 'prompt'");
    }
    return { kind: "text", model, prompt: body.prompt };
  }
  if (!hasMessages) throw invalid("prompt", "'prompt' (a string) or 'messages' (a chat) is required");
  return {
    kind: "chat",
    model,
    messages: parseMessages(body.messages),
    addGenerationPrompt: addGenerationPrompt ?? true,
    tools: parseToolRequest({ tools: body.tools })?.tools ?? [],
  };
}

/** Validates a `POST /detokenize` body: `tokens`, an array of non-negative integer ids. */
export function parseDetokenizeRequest(raw: unknown): DetokenizeRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, detokenizeFields);
  const model = requiredString(body, "model");
  const tokens = body.tokens;
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isSafeInteger(t) && (t as number) >= 0)) {
    throw invalid("tokens", "'tokens' is required and must be an array of non-negative integer token ids");
  }
  return { model, tokens: tokens as number[] };
}
