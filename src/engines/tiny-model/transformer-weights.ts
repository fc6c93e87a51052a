import { SeededRandom } from "../seeded-random.js";
import type { BigramFactors } from "./bigram.js";
import type { TensorSpec } from "./gguf-writer.js";

/**
 * The tiny model's tensors: a bigram model realised by a llama-architecture transformer.
 *
 * Residual stream (width 64): dims [0, rank) hold the current token's bigram row factor; the next
 * head-width dims hold the token's identity code (a seeded random unit vector, zero for
 * punctuation and special tokens); then `MARKER` (1 only for `<|im_start|>`), `CHAT` (written by
 * attention), `CONSTANT` (1 for every token, so output rows can carry a per-token bias) and
 * `PADDING` (sets every embedding's length to 8, so RMSNorm, which divides by the root mean square,
 * leaves it unchanged).
 *
 * Layer 0, head 0 is the chat head: its query is constant and its key is large only at
 * `<|im_start|>`, so once a chat turn has begun it attends there and writes 1 into `CHAT`; the
 * output row of `<|im_end|>` reads `CHAT`, which makes ending the turn after a full stop likelier
 * than going on. Layer 1, head 0 is the repetition head: a zero query attends to the whole context
 * alike and copies the mean identity code into the stream, and every output row reads minus its own
 * code, so words already said lose logits in proportion to their share of the context, and loops
 * break up in ways that depend on the prompt. The other heads have seeded random query, key and
 * value weights and a small output projection. So the KV cache shapes every token. Feed-forward
 * blocks add nothing (zero down projection).
 */
export interface SpeakingShape {
  readonly dim: number;
  readonly layers: number;
  readonly heads: number;
  readonly feedForward: number;
  readonly vocabSize: number;
  readonly imStart: number;
  readonly imEnd: number;
  /** The full stop token, which inside a chat turn gains `chatStopBoost`: answers are short. */
  readonly fullStop: number;
  readonly chatStopBoost: number;
  /** Added to `<|im_end|>`'s logit inside a chat turn. */
  readonly chatEndBoost: number;
  /** Scale of the random heads' output projection. */
  readonly mixing: number;
  /** Logits a word loses when it makes up the whole context. */
  readonly repetitionPenalty: number;
  /** Single-character tokens of JSON's syntax. */
  readonly structural: (token: number) => boolean;
  /** Tokens with an identity code (words); the others are never penalised. */
  readonly coded: (token: number) => boolean;
  readonly seed: number;
}

/** Logit of tokens that never occur in the corpus (bytes, partial merges), below any seen token. */
const UNSEEN_LOGIT = -12;
/**
 * Logit of JSON's structural characters that the corpus never shows (`[`, `]`, …): low, but within
 * reach when a grammar allows nothing likelier (a list of tool calls must be able to close).
 */
const STRUCTURAL_LOGIT = -3;
/** Logits `<|im_end|>` loses outside a chat turn. */
const PROSE_END_PENALTY = 8;
/** Length of every embedding row: root mean square 1 at width 64. */
const ROW_LENGTH = 8;
/** Attention score of the chat head at `<|im_start|>` (others score 0). */
const MARKER_SCORE = 24;
/** Length of a word's identity code in the embedding. */
const CODE_LENGTH = 2;
/** How much the repetition head amplifies the context's mean code over the current token's own. */
const REPEAT_GAIN = 4;

/** Bigram factor dims of a residual stream `dim` wide with `heads` heads. */
export function bigramRank(dim: number, heads: number): number {
  return dim - dim / heads - 4;
}

/** The residual dim that is 1 for every token (`CONSTANT`): what a per-token output bias reads. */
export function constantDimension(dim: number, heads: number): number {
  return bigramRank(dim, heads) + dim / heads + 2;
}

export function speakingTensors(shape: SpeakingShape, factors: BigramFactors): TensorSpec[] {
  const { dim, layers, heads, feedForward: ff, vocabSize } = shape;
  const headDim = dim / heads;
  const rank = bigramRank(dim, heads);
  const CODE = rank;
  const [MARKER, CHAT, PADDING] = [CODE + headDim, CODE + headDim + 1, CODE + headDim + 3];
  const CONSTANT = constantDimension(dim, heads);
  const seen = new Set(factors.seen);
  const rng = new SeededRandom(shape.seed);

  // Row factors scaled to fit in the embedding; column factors scaled back so products are kept.
  let longest = 0;
  for (let t = 0; t < vocabSize; t++) longest = Math.max(longest, norm(factors.rows[t] as Float64Array));
  const room = Math.sqrt(ROW_LENGTH ** 2 - CODE_LENGTH ** 2 - 2) - 0.25;
  const scale = room / Math.max(longest, 1e-9);
  const embedding = new Float32Array(dim * vocabSize);
  const output = new Float32Array(dim * vocabSize);
  for (let t = 0; t < vocabSize; t++) {
    const row = factors.rows[t] as Float64Array;
    const column = factors.columns[t] as Float64Array;
    const e = t * dim;
    let length2 = 0;
    for (let r = 0; r < rank; r++) {
      embedding[e + r] = (row[r] as number) * scale;
      length2 += (embedding[e + r] as number) ** 2;
      output[e + r] = (column[r] as number) / scale;
    }
    const code = Float64Array.from({ length: headDim }, () => rng.gaussian());
    const codeNorm = shape.coded(t) ? norm(code) : Number.POSITIVE_INFINITY;
    for (let i = 0; i < headDim; i++) {
      embedding[e + CODE + i] = ((code[i] as number) / codeNorm) * CODE_LENGTH;
      length2 += (embedding[e + CODE + i] as number) ** 2;
      // Read back through the repetition head (which multiplies by REPEAT_GAIN): minus the penalty.
      output[e + CODE + i] = -((code[i] as number) / codeNorm) * (shape.repetitionPenalty / CODE_LENGTH / REPEAT_GAIN);
    }
    embedding[e + MARKER] = t === shape.imStart ? 1 : 0;
    embedding[e + CONSTANT] = 1;
    length2 += 1 + (embedding[e + MARKER] as number) ** 2;
    embedding[e + PADDING] = Math.sqrt(Math.max(0, ROW_LENGTH ** 2 - length2));
    output[e + CONSTANT] = seen.has(t) ? 0 : shape.structural(t) ? STRUCTURAL_LOGIT : UNSEEN_LOGIT;
    if (t === shape.fullStop) output[e + CHAT] = shape.chatStopBoost;
    // Running text does not end by itself; a chat turn ends through `CHAT`.
    if (t === shape.imEnd) {
      output[e + CONSTANT] = -PROSE_END_PENALTY;
      output[e + CHAT] = shape.chatEndBoost + PROSE_END_PENALTY;
    }
  }

  const random = (count: number, std: number): Float32Array => {
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = rng.gaussian() * std;
    return out;
  };
  const ones = (count: number): Float32Array => new Float32Array(count).fill(1);
  const inputStd = 1 / Math.sqrt(dim);
  const tensors: TensorSpec[] = [
    { name: "token_embd.weight", dims: [dim, vocabSize], data: embedding },
    { name: "output_norm.weight", dims: [dim], data: ones(dim) },
    { name: "output.weight", dims: [dim, vocabSize], data: output },
  ];
  for (let l = 0; l < layers; l++) {
    const q = random(dim * dim, inputStd);
    const k = random(dim * dim, inputStd);
    const v = random(dim * dim, inputStd);
    // Output projection: the random heads write small amounts into the bigram dims only.
    const o = new Float32Array(dim * dim);
    for (let out = 0; out < rank; out++) {
      for (let i = 0; i < dim; i++) o[out * dim + i] = rng.gaussian() * shape.mixing * inputStd;
    }
    if (l === 0) {
      // Head 0 (rows [0, headDim) of q, k, v; columns [0, headDim) of o) becomes the chat head.
      q.fill(0, 0, headDim * dim);
      k.fill(0, 0, headDim * dim);
      v.fill(0, 0, headDim * dim);
      for (let out = 0; out < dim; out++) o.fill(0, out * dim, out * dim + headDim);
      // The score uses the last rotary pair of the head, which turns slowest with position.
      const slot = headDim - 2;
      const side = Math.sqrt(MARKER_SCORE * Math.sqrt(headDim));
      q[slot * dim + CONSTANT] = side;
      k[slot * dim + MARKER] = side;
      v[0 * dim + MARKER] = 1;
      o[CHAT * dim + 0] = 1;
    } else if (l === 1) {
      // Head 0 becomes the repetition head: zero query, values and output copy the code dims.
      q.fill(0, 0, headDim * dim);
      v.fill(0, 0, headDim * dim);
      for (let out = 0; out < dim; out++) o.fill(0, out * dim, out * dim + headDim);
      for (let i = 0; i < headDim; i++) {
        v[i * dim + CODE + i] = 1;
        o[(CODE + i) * dim + i] = REPEAT_GAIN;
      }
    }
    const p = `blk.${l}`;
    tensors.push(
      { name: `${p}.attn_norm.weight`, dims: [dim], data: ones(dim) },
      { name: `${p}.attn_q.weight`, dims: [dim, dim], data: q },
      { name: `${p}.attn_k.weight`, dims: [dim, dim], data: k },
      { name: `${p}.attn_v.weight`, dims: [dim, dim], data: v },
      { name: `${p}.attn_output.weight`, dims: [dim, dim], data: o },
      { name: `${p}.ffn_norm.weight`, dims: [dim], data: ones(dim) },
      { name: `${p}.ffn_gate.weight`, dims: [dim, ff], data: random(dim * ff, inputStd) },
      { name: `${p}.ffn_up.weight`, dims: [dim, ff], data: random(dim * ff, inputStd) },
      { name: `${p}.ffn_down.weight`, dims: [ff, dim], data: new Float32Array(ff * dim) },
    );
  }
  return tensors;
}

function norm(v: Float64Array): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}
