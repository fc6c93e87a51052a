import type { WeightedStream } from "./bigram.js";
import { type BpeVocabulary, encodeBpe } from "./byte-bpe.js";
import { ENGLISH_CORPUS } from "./english-corpus.js";

/** The text the tiny model's tokenizer and next-token statistics come from. */
export const TRAINING_TEXT = ENGLISH_CORPUS;

const JSON_LISTS = '[1, 2, 3] [{"name": "Ada", "age": 36}, {"name": "Tom", "age": 7}] [{"city": "Paris"}]';

/** What the tokenizer is learned on: the training text and the chat template's role names. */
export const TOKENIZER_TEXT = `${TRAINING_TEXT}\nsystem\nuser\nassistant\n`;

/** Chat answers weigh less than running text, so that text goes on past a full stop. */
const CHAT_WEIGHT = 0.25;

/**
 * The token streams whose bigrams the model learns: the training text as running prose (whitespace
 * folded to single spaces), and every line of the English corpus as an assistant turn of the ChatML
 * template (`<|im_start|>assistant\n` … `<|im_end|>`), which is where the model learns to end.
 */
export function trainingStreams(
  vocabulary: BpeVocabulary,
  special: { readonly imStart: number; readonly imEnd: number },
): WeightedStream[] {
  const prose = encodeBpe(vocabulary, TRAINING_TEXT.replace(/\s+/g, " ").trim());
  const streams: WeightedStream[] = [{ tokens: prose, weight: 1 }];
  // JSON lists, so that a list (of tool calls, say) can close: `]` follows `}` and numbers.
  streams.push({ tokens: encodeBpe(vocabulary, JSON_LISTS), weight: 1 });
  const header = encodeBpe(vocabulary, "assistant\n");
  for (const line of ENGLISH_CORPUS.split("\n")) {
    const answer = line.trim();
    if (answer.length === 0) continue;
    const tokens = [special.imStart, ...header, ...encodeBpe(vocabulary, answer), special.imEnd];
    streams.push({ tokens, weight: CHAT_WEIGHT });
  }
  return streams;
}
