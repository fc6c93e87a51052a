/**
 * `--reasoning-parser`: splits a thinking model's answer into its reasoning (`reasoning_content`, as
 * vLLM and Dynamo name it) and its content. Both parsers read `<think>…</think>`; thinking is assumed
 * on, so text before `</think>` is reasoning even when `<think>` itself was in the prompt (as the
 * DeepSeek-R1 and Qwen3 templates put it), and an answer cut off before `</think>` is all reasoning.
 * `qwen3` also ends the reasoning at a `<tool_call>`, which stays in the content for the tool parser.
 */
export const REASONING_PARSER_NAMES = ["deepseek_r1", "qwen3"] as const;
export type ReasoningParserName = (typeof REASONING_PARSER_NAMES)[number];

const START = "<think>";
const END = "</think>";

/** Markers that end the reasoning and belong to the content, per parser. */
const IMPLICIT_ENDS: Record<ReasoningParserName, readonly string[]> = {
  deepseek_r1: [],
  qwen3: ["<tool_call>"],
};

/** A whole answer split: `content` is null when nothing follows the reasoning. */
export interface SplitAnswer {
  readonly reasoning: string;
  readonly content: string | null;
}

/** Splits a whole answer (a unary response). Text before a `<think>` is dropped with it. */
export function splitReasoning(parser: ReasoningParserName, text: string): SplitAnswer {
  const start = text.indexOf(START);
  const body = start >= 0 ? text.slice(start + START.length) : text;
  const end = firstEnd(parser, body);
  if (end === undefined) return { reasoning: body, content: null };
  const content = body.slice(end.contentFrom);
  return { reasoning: body.slice(0, end.at), content: content === "" ? null : content };
}

/** One piece of a streamed answer, in order. */
export type ReasoningDelta = { readonly kind: "reasoning" | "content"; readonly text: string };

/**
 * Splits a streamed answer as it arrives. A piece that may be the start of a marker is held back
 * until the next piece shows what it is (at most a marker's length), and no delta is empty. Text
 * that came before a `<think>` was sent as reasoning already: streamed, it stays reasoning.
 */
export class ReasoningStream {
  readonly #parser: ReasoningParserName;
  #inContent = false;
  #sawStart = false;
  #pending = "";

  constructor(parser: ReasoningParserName) {
    this.#parser = parser;
  }

  push(piece: string): ReasoningDelta[] {
    if (this.#inContent) return piece === "" ? [] : [{ kind: "content", text: piece }];
    let text = this.#pending + piece;
    this.#pending = "";
    const out: ReasoningDelta[] = [];
    if (!this.#sawStart) {
      const start = text.indexOf(START);
      if (start >= 0) {
        emit(out, "reasoning", text.slice(0, start));
        text = text.slice(start + START.length);
        this.#sawStart = true;
      }
    }
    const end = firstEnd(this.#parser, text);
    if (end !== undefined) {
      emit(out, "reasoning", text.slice(0, end.at));
      emit(out, "content", text.slice(end.contentFrom));
      this.#inContent = true;
      return out;
    }
    const held = this.#heldTail(text);
    emit(out, "reasoning", text.slice(0, text.length - held));
    this.#pending = text.slice(text.length - held);
    return out;
  }

  /** What was held back, at the end of the answer. */
  finish(): ReasoningDelta[] {
    const out: ReasoningDelta[] = [];
    emit(out, this.#inContent ? "content" : "reasoning", this.#pending);
    this.#pending = "";
    return out;
  }

  /** The length of the longest tail of `text` that is a proper prefix of a marker still to come. */
  #heldTail(text: string): number {
    const markers = [END, ...IMPLICIT_ENDS[this.#parser], ...(this.#sawStart ? [] : [START])];
    let held = 0;
    for (const marker of markers) {
      for (let n = Math.min(marker.length - 1, text.length); n > held; n--) {
        if (text.endsWith(marker.slice(0, n))) {
          held = n;
          break;
        }
      }
    }
    return held;
  }
}

/** Where the reasoning ends in `text`: `</think>` (dropped) or an implicit end (kept), whichever is first. */
function firstEnd(parser: ReasoningParserName, text: string): { at: number; contentFrom: number } | undefined {
  let best: { at: number; contentFrom: number } | undefined;
  const end = text.indexOf(END);
  if (end >= 0) best = { at: end, contentFrom: end + END.length };
  for (const marker of IMPLICIT_ENDS[parser]) {
    const at = text.indexOf(marker);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, contentFrom: at };
  }
  return best;
}

function emit(out: ReasoningDelta[], kind: ReasoningDelta["kind"], text: string): void {
  if (text === "") return;
  const last = out.at(-1);
  if (last?.kind === kind) out[out.length - 1] = { kind, text: last.text + text };
  else out.push({ kind, text });
}
