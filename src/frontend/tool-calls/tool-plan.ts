import { SchemaRefusal, schemaGbnf } from "../../grammar/index.js";
import { ArmatureError, type ModelCard, type ResponseConstraint } from "../../protocol/index.js";
import { newToolCallId } from "./call-ids.js";
import { ConstrainedCallStream } from "./constrained-stream.js";
import { ParsedCallStream } from "./parsed-stream.js";
import { inferToolCallParser, toolCallParser } from "./parsers.js";
import type { ChatDeltaShaper } from "./stream-types.js";
import { readConstrainedCalls, toolCallConstraint } from "./tool-constraint.js";
import type { ChatToolCall, ToolCallParser, ToolCallParserName, ToolRequest } from "./types.js";

/** How one chat request's answer becomes content and tool calls. */
export type ToolCallPlan =
  /** No tools, `tool_choice: "none"`, or `auto` with no parser known: the answer is content. */
  | { readonly mode: "text" }
  /** `auto`: the parser finds calls in the answer (the first only, without `parallel_tool_calls`). */
  | { readonly mode: "parse"; readonly parser: ToolCallParser; readonly parallel: boolean }
  /** `required` or a named function: the grammar makes the whole answer calls. */
  | { readonly mode: "constrained"; readonly constraint: ResponseConstraint };

/**
 * Decides how a request's tools are served on `card`'s model: `required` and named functions by
 * constrained decoding (refused, naming `tool_choice`, on an engine without grammars: the mocker),
 * `auto` by `--tool-call-parser` or else the parser the chat template points to.
 */
export function planToolCalls(
  tools: ToolRequest | undefined,
  card: ModelCard,
  parserName: ToolCallParserName | undefined,
): ToolCallPlan {
  if (!tools || tools.choice.type === "none") return { mode: "text" };
  const constraint = toolCallConstraint(tools);
  if (constraint) {
    if (card.engine === "mocker") {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        `'tool_choice' ${tools.choice.type === "required" ? '"required"' : "naming a function"} needs constrained decoding, which the mocker engine does not do; use "auto" or "none", or serve with --engine llamacpp`,
        { param: "tool_choice" },
      );
    }
    refuseUnenforceable(tools, constraint);
    return { mode: "constrained", constraint };
  }
  const parser = parserName ? toolCallParser(parserName) : inferToolCallParser(card.chatTemplate);
  return parser ? { mode: "parse", parser, parallel: tools.parallel } : { mode: "text" };
}

/**
 * Compiles the call schema here, before any worker is asked, so a keyword of a tool's parameters
 * that cannot be enforced is refused naming the tool and the keyword's pointer in its parameters.
 */
function refuseUnenforceable(tools: ToolRequest, constraint: ResponseConstraint): void {
  if (constraint.type !== "json_schema") return;
  try {
    schemaGbnf(constraint.schema);
  } catch (error) {
    if (!(error instanceof SchemaRefusal)) throw error;
    const match = /^(?:\/items)?(?:\/anyOf\/(\d+))?\/properties\/arguments(.*)$/.exec(error.pointer);
    const named = tools.choice.type === "function" ? tools.choice.name : undefined;
    const index =
      match?.[1] !== undefined ? Number(match[1]) : tools.tools.findIndex((t) => t.name === (named ?? tools.tools[0]?.name));
    const param = match ? `tools[${index}].function.parameters${match[2] ?? ""}` : "tools";
    throw new ArmatureError("REQUEST_INVALID", `tool '${tools.tools[index]?.name}': ${error.message}`, { param });
  }
}

/** A whole (non-streamed) answer as the message's `content` and `tool_calls`. */
export function answerWithToolCalls(plan: ToolCallPlan, text: string): { content: string | null; toolCalls: ChatToolCall[] } {
  if (plan.mode === "text") return { content: text, toolCalls: [] };
  const parsed =
    plan.mode === "parse"
      ? plan.parser.parse(text)
      : ((calls) => (calls ? { content: null, calls } : undefined))(readConstrainedCalls(text));
  // A constrained answer cut short (max_tokens) is no call: the client sees the text it got.
  if (!parsed || parsed.calls.length === 0) return { content: text, toolCalls: [] };
  const calls = plan.mode === "parse" && !plan.parallel ? parsed.calls.slice(0, 1) : parsed.calls;
  return {
    content: parsed.content,
    toolCalls: calls.map((call) => ({ id: newToolCallId(), type: "function", function: { ...call } })),
  };
}

/** The stream shaper for `plan`; undefined when the answer is plain content. */
export function toolCallStream(plan: ToolCallPlan): ChatDeltaShaper | undefined {
  if (plan.mode === "text") return undefined;
  return plan.mode === "parse"
    ? new ParsedCallStream(plan.parser, plan.parallel ? Number.POSITIVE_INFINITY : 1)
    : new ConstrainedCallStream();
}
