import type { TokenizerSource } from "../protocol/index.js";
import { ByteTokenizer } from "./byte-tokenizer.js";
import { HfTokenizer } from "./huggingface/hf-tokenizer.js";
import { GgufTokenizer } from "./llamacpp/gguf-tokenizer.js";
import type { Tokenizer } from "./tokenizer.js";

/** Loads the tokenizer a model card points at, without loading model weights. */
export async function loadTokenizer(source: TokenizerSource): Promise<Tokenizer> {
  switch (source.kind) {
    case "bytes":
      return new ByteTokenizer();
    case "gguf":
      return GgufTokenizer.load(source.path);
    case "huggingface":
      return HfTokenizer.load(source.path);
  }
}
