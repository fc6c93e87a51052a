import type { TokenizerBundle } from "../engines/index.js";
import {
  ArmatureError,
  subjects,
  TOKENIZER_PART_BYTES,
  type TokenizerFilePart,
  tokenizerRequestSchema,
} from "../protocol/index.js";
import type { Registration, Runtime } from "../runtime/index.js";

export interface TokenizerServiceOptions {
  readonly runtime: Runtime;
  readonly workerId: string;
  /** The bundle the worker's card names (read when the worker started). */
  readonly bundle: TokenizerBundle;
}

/**
 * Hands out the worker's tokenizer bundle at `subjects.tokenizer` (a GGUF's metadata without its
 * tensors, or a folder's tokenizer files), in pieces, to frontends that cannot read the path its
 * card names, or read other files there.
 */
export function serveTokenizer(options: TokenizerServiceOptions): Promise<Registration> {
  const address = subjects.tokenizer(options.workerId);
  return options.runtime.requests.serve(address, (payload) => tokenizerCall(options, address, payload));
}

async function* tokenizerCall(o: TokenizerServiceOptions, address: string, payload: unknown): AsyncGenerator<TokenizerFilePart> {
  const request = o.runtime.invalidMessages.check("tokenizer-request", tokenizerRequestSchema, payload, address);
  const { bundle } = o;
  if (request.sha256 !== bundle.sha256) {
    throw new ArmatureError("RESOURCE_NOT_FOUND", `worker ${o.workerId} holds tokenizer ${bundle.sha256}, not ${request.sha256}`);
  }
  for (const file of bundle.files) {
    const size = file.bytes.length;
    for (let offset = 0; offset === 0 || offset < size; offset += TOKENIZER_PART_BYTES) {
      const data = file.bytes.subarray(offset, offset + TOKENIZER_PART_BYTES).toString("base64");
      yield { type: "tokenizer-file", name: file.name, size, offset, data };
    }
  }
}
