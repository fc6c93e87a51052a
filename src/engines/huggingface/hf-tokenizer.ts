import { Tokenizer as TokenizersJs } from "@huggingface/tokenizers";
import { ArmatureError } from "../../protocol/index.js";
import type { Tokenizer } from "../tokenizer.js";
import { OffLoopEncoder } from "../tokenizer-thread.js";
import { readTokenizerFolder, type TokenizerFolder } from "./tokenizer-folder.js";

/**
 * A Hugging Face tokenizer (`tokenizer.json`, the format vLLM, SGLang and TRT-LLM load), run by
 * tokenizers.js. Special-token text always becomes its token, as Hugging Face tokenizers read it
 * (and vLLM's prompts with them); asking otherwise is refused. Long texts are tokenized off the event
 * loop, as a GGUF's are.
 */
export class HfTokenizer implements Tokenizer {
  readonly folder: TokenizerFolder;
  readonly #tokenizer: TokenizersJs;
  readonly #offLoop: OffLoopEncoder;
  readonly vocabSize: number;
  readonly maxTokenBytes: number;
  /** Ids of the added tokens marked special (decoded to nothing, as vLLM's `skip_special_tokens`). */
  readonly specialIds: ReadonlySet<number>;

  constructor(folder: TokenizerFolder) {
    this.folder = folder;
    try {
      this.#tokenizer = new TokenizersJs(folder.tokenizerJson, folder.config);
    } catch (cause) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `--tokenizer ${folder.path}: tokenizer.json cannot be read as a tokenizer (${(cause as Error).message})`,
        { cause },
      );
    }
    const vocab = (folder.tokenizerJson.model as { vocab?: unknown } | undefined)?.vocab;
    const added = Array.isArray(folder.tokenizerJson.added_tokens)
      ? (folder.tokenizerJson.added_tokens as { id?: unknown; content?: unknown; special?: unknown }[])
      : [];
    let size = 0;
    let maxBytes = 1;
    const measure = (text: string, id: number): void => {
      size = Math.max(size, id + 1);
      maxBytes = Math.max(maxBytes, Buffer.byteLength(text));
    };
    // A vocabulary is a map (BPE, WordPiece) or a list of [piece, score] (Unigram). Stored pieces are
    // never shorter than what they decode to (byte-level BPE writes a byte as one or two UTF-8 bytes,
    // SentencePiece a space as the three-byte `▁`, byte fallback as `<0xNN>`), so they bound it.
    if (Array.isArray(vocab)) {
      for (const [id, entry] of vocab.entries()) measure(String((entry as unknown[])[0]), id);
    } else if (vocab && typeof vocab === "object")
      for (const [piece, id] of Object.entries(vocab as Record<string, number>)) measure(piece, id);
    const special = new Set<number>();
    for (const token of added) {
      if (!Number.isInteger(token.id)) continue;
      measure(String(token.content), token.id as number);
      if (token.special === true) special.add(token.id as number);
    }
    this.vocabSize = size;
    this.maxTokenBytes = maxBytes;
    this.specialIds = special;
    this.#offLoop = new OffLoopEncoder({ kind: "huggingface", path: folder.path }, (text, asSpecial) =>
      this.encode(text, { special: asSpecial }),
    );
  }

  /** Reads the folder at `path` (`--tokenizer DIR`). */
  static load(path: string): HfTokenizer {
    return new HfTokenizer(readTokenizerFolder(path));
  }

  /** The token id of `text` where it is one token of the vocabulary (added tokens included). */
  tokenId(text: string): number | undefined {
    return this.#tokenizer.token_to_id(text);
  }

  encode(text: string, options: { special?: boolean } = {}): number[] {
    if (options.special === false) {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        "a Hugging Face tokenizer reads special-token text as its token; it cannot take it as plain text",
      );
    }
    return this.#tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /** As `encode`; a text of `OFF_LOOP_CHARACTERS` or more is tokenized on a worker thread. */
  encodeAsync(text: string, options: { special?: boolean } = {}): Promise<number[]> {
    return this.#offLoop.encode(text, options.special ?? true);
  }

  /** Resolves true once long texts go to the tokenizing thread (starting it). */
  offLoopReady(): Promise<boolean> {
    return this.#offLoop.ready();
  }

  async close(): Promise<void> {
    await this.#offLoop.close();
  }

  /** Special tokens decode to nothing, as with vLLM's `skip_special_tokens`. */
  decode(tokenIds: readonly number[]): string {
    if (tokenIds.length === 0) return ""; // tokenizers.js refuses an empty list
    return this.#tokenizer.decode(tokenIds as number[], { skip_special_tokens: true });
  }
}
