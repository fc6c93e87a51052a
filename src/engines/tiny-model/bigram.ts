import { SeededRandom } from "../seeded-random.js";

/**
 * Next-token statistics of token streams, as a low-rank factorisation of the log bigram
 * probabilities: `logits(next | current) ≈ rows[current] · columns[next]` (up to a constant per
 * current token, which softmax ignores).
 */
export interface BigramFactors {
  /** Token ids that occur in the streams, in increasing order. */
  readonly seen: readonly number[];
  /** For every vocabulary id: its row factor (`rank` values), or the unigram row if unseen as current. */
  readonly rows: readonly Float64Array[];
  /** For every vocabulary id: its column factor; zeros for ids never seen. */
  readonly columns: readonly Float64Array[];
  /** The factorised logits of `next` after `current` (what the model's output will compute). */
  logit(current: number, next: number): number;
}

export interface WeightedStream {
  readonly tokens: readonly number[];
  readonly weight: number;
}

/** Additive smoothing towards the unigram distribution, in counts. */
const SMOOTHING = 0.5;
const ITERATIONS = 6;
/** The most frequent successor's lead over any other token, in logits, after repair. */
const REPAIR_MARGIN = 1;
const REPAIR_STEPS = 40;

/**
 * Counts bigrams of `streams`, smooths each row towards the unigram distribution, centres the log
 * probabilities per row and keeps their best rank-`rank` approximation (subspace iteration from
 * seeded random vectors: the same input gives the same factors).
 */
export function factorBigrams(streams: readonly WeightedStream[], vocabSize: number, rank: number, seed: number): BigramFactors {
  const counts = new Map<number, Map<number, number>>();
  const unigram = new Map<number, number>();
  for (const { tokens, weight } of streams) {
    for (let i = 0; i + 1 < tokens.length; i++) {
      const [a, b] = [tokens[i] as number, tokens[i + 1] as number];
      const row = counts.get(a) ?? new Map<number, number>();
      counts.set(a, row);
      row.set(b, (row.get(b) ?? 0) + weight);
      unigram.set(b, (unigram.get(b) ?? 0) + weight);
    }
  }
  const seenSet = new Set<number>([...counts.keys(), ...unigram.keys()]);
  const seen = [...seenSet].sort((x, y) => x - y);
  const n = seen.length;
  const index = new Map(seen.map((id, k) => [id, k]));
  const total = [...unigram.values()].reduce((x, y) => x + y, 0);
  const prior = new Float64Array(n);
  for (const [id, c] of unigram) prior[index.get(id) as number] = c / total;

  // One centred row of log probabilities per seen id, plus the unigram row for everything else.
  const logRow = (row: Map<number, number> | undefined): Float64Array => {
    const out = new Float64Array(n);
    let rowTotal = 0;
    for (const c of row?.values() ?? []) rowTotal += c;
    let mean = 0;
    for (let k = 0; k < n; k++) {
      const c = row?.get(seen[k] as number) ?? 0;
      out[k] = Math.log((c + SMOOTHING * ((prior[k] as number) + 1e-3)) / (rowTotal + SMOOTHING));
      mean += out[k] as number;
    }
    mean /= n;
    for (let k = 0; k < n; k++) out[k] = (out[k] as number) - mean;
    return out;
  };
  const matrix = seen.map((id) => logRow(counts.get(id)));
  const unigramRow = logRow(undefined);

  const basis = rightSubspace(matrix, n, Math.min(rank, n), seed);
  const project = (row: Float64Array): Float64Array => {
    const out = new Float64Array(rank);
    for (let r = 0; r < basis.length; r++) {
      const q = basis[r] as Float64Array;
      let s = 0;
      for (let k = 0; k < n; k++) s += (row[k] as number) * (q[k] as number);
      out[r] = s;
    }
    return out;
  };
  const unigramFactor = project(unigramRow);
  const rows: Float64Array[] = new Array(vocabSize);
  const columns: Float64Array[] = new Array(vocabSize);
  for (let id = 0; id < vocabSize; id++) {
    const k = index.get(id);
    rows[id] = k !== undefined && counts.has(id) ? project(matrix[k] as Float64Array) : unigramFactor;
    const column = new Float64Array(rank);
    if (k !== undefined) for (let r = 0; r < basis.length; r++) column[r] = (basis[r] as Float64Array)[k] as number;
    columns[id] = column;
  }
  // Repairs may not lengthen a row past the longest unrepaired one: that would shrink every other
  // row when the embedding is scaled to fit.
  let longest = 0;
  for (const id of counts.keys()) longest = Math.max(longest, Math.sqrt(dot(rows[id] as Float64Array, rows[id] as Float64Array)));
  for (const [id, row] of counts) repairTop(rows[id] as Float64Array, row, seen, columns, longest);
  repairTop(unigramFactor, unigram, seen, columns, longest);
  const logit = (current: number, next: number): number => {
    return dot(rows[current] as Float64Array, columns[next] as Float64Array);
  };
  return { seen, rows, columns, logit };
}

/**
 * Low rank can cost a row its most frequent successor; nudges the row factor (perceptron steps
 * towards the successor's column, away from the winner's) until that successor leads by a margin.
 */
function repairTop(
  factor: Float64Array,
  row: Map<number, number>,
  seen: readonly number[],
  columns: readonly Float64Array[],
  longest: number,
): void {
  const original = Float64Array.from(factor);
  let top = -1;
  let topCount = 0;
  for (const [id, c] of row) if (c > topCount || (c === topCount && id < top)) [top, topCount] = [id, c];
  const want = columns[top] as Float64Array;
  for (let step = 0; step < REPAIR_STEPS; step++) {
    const topLogit = dot(factor, want);
    let winner = -1;
    let winnerLogit = Number.NEGATIVE_INFINITY;
    for (const id of seen) {
      if (id === top) continue;
      const l = dot(factor, columns[id] as Float64Array);
      if (l > winnerLogit) [winner, winnerLogit] = [id, l];
    }
    if (winner < 0 || topLogit - winnerLogit >= REPAIR_MARGIN) return;
    const other = columns[winner] as Float64Array;
    let gap2 = 0;
    for (let r = 0; r < factor.length; r++) gap2 += ((want[r] as number) - (other[r] as number)) ** 2;
    if (gap2 < 1e-12) return;
    const eta = (winnerLogit - topLogit + REPAIR_MARGIN) / gap2;
    for (let r = 0; r < factor.length; r++) {
      factor[r] = (factor[r] as number) + eta * ((want[r] as number) - (other[r] as number));
    }
    if (Math.sqrt(dot(factor, factor)) > longest) {
      factor.set(original);
      return;
    }
  }
}

function dot(a: Float64Array, b: Float64Array): number {
  let s = 0;
  for (let r = 0; r < a.length; r++) s += (a[r] as number) * (b[r] as number);
  return s;
}

/** Orthonormal basis (`rank` vectors of length n) of the top right singular subspace of `m`. */
function rightSubspace(m: readonly Float64Array[], n: number, rank: number, seed: number): Float64Array[] {
  // The Gram matrix G = MᵀM once; then subspace iteration q ← G q.
  const gram = new Float64Array(n * n);
  for (const row of m) {
    for (let a = 0; a < n; a++) {
      const x = row[a] as number;
      if (x === 0) continue;
      const offset = a * n;
      for (let b = a; b < n; b++) gram[offset + b] = (gram[offset + b] as number) + x * (row[b] as number);
    }
  }
  for (let a = 0; a < n; a++) for (let b = 0; b < a; b++) gram[a * n + b] = gram[b * n + a] as number;
  const rng = new SeededRandom(seed);
  let q = Array.from({ length: rank }, () => Float64Array.from({ length: n }, () => rng.gaussian()));
  orthonormalise(q);
  for (let iteration = 0; iteration < ITERATIONS; iteration++) {
    q = q.map((v) => {
      const next = new Float64Array(n);
      for (let a = 0; a < n; a++) {
        const offset = a * n;
        let s = 0;
        for (let b = 0; b < n; b++) s += (gram[offset + b] as number) * (v[b] as number);
        next[a] = s;
      }
      return next;
    });
    orthonormalise(q);
  }
  return q;
}

/** Modified Gram-Schmidt, in place. */
function orthonormalise(vectors: Float64Array[]): void {
  for (let a = 0; a < vectors.length; a++) {
    const v = vectors[a] as Float64Array;
    for (let b = 0; b < a; b++) {
      const u = vectors[b] as Float64Array;
      let dot = 0;
      for (let k = 0; k < v.length; k++) dot += (v[k] as number) * (u[k] as number);
      for (let k = 0; k < v.length; k++) v[k] = (v[k] as number) - dot * (u[k] as number);
    }
    let norm = 0;
    for (let k = 0; k < v.length; k++) norm += (v[k] as number) ** 2;
    norm = Math.sqrt(norm) || 1;
    for (let k = 0; k < v.length; k++) v[k] = (v[k] as number) / norm;
  }
}
