/**
 * A byte-level BPE vocabulary in GPT-2's conventions (bytes shown through `bytes_to_unicode`),
 * learned deterministically from a small embedded corpus. llama.cpp's `gpt2` tokenizer reads it.
 */

/** GPT-2's reversible map from bytes to printable unicode characters. */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 33; b <= 126; b++) printable.push(b);
  for (let b = 161; b <= 172; b++) printable.push(b);
  for (let b = 174; b <= 255; b++) printable.push(b);
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    if (printable.includes(b)) table[b] = String.fromCodePoint(b);
    else table[b] = String.fromCodePoint(256 + extra++);
  }
  return table;
}

/** GPT-2's pre-tokenizer split. */
const PRETOKENIZE = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

export interface BpeVocabulary {
  /** Token strings: 256 byte tokens (id = byte value), then one per merge. */
  readonly tokens: string[];
  /** Merges in priority order, as "left right". */
  readonly merges: string[];
}

/**
 * Learns up to `mergeCount` merges from `corpus`; ties break on the lexicographically smaller pair.
 * Pairs seen fewer than `minCount` times are not merged: with 1, merging goes on until every piece of
 * the corpus is one token (or `mergeCount` is reached).
 */
export function learnBpe(corpus: string, mergeCount: number, minCount = 2): BpeVocabulary {
  const byteChar = bytesToUnicode();
  const words = new Map<string, number>();
  for (const piece of corpus.match(PRETOKENIZE) ?? []) {
    const mapped = [...Buffer.from(piece, "utf8")].map((b) => byteChar[b] ?? "").join("\u0000");
    words.set(mapped, (words.get(mapped) ?? 0) + 1);
  }
  let segmented = [...words.entries()].map(([w, count]) => ({ parts: w.split("\u0000"), count }));
  const tokens = [...byteChar];
  const known = new Set(tokens);
  const merges: string[] = [];
  const banned = new Set<string>();
  while (merges.length < mergeCount) {
    const pairs = new Map<string, number>();
    for (const { parts, count } of segmented) {
      for (let i = 0; i + 1 < parts.length; i++) {
        const key = `${parts[i]} ${parts[i + 1]}`;
        if (!banned.has(key)) pairs.set(key, (pairs.get(key) ?? 0) + count);
      }
    }
    let best: string | undefined;
    let bestCount = 0;
    for (const [key, count] of pairs) {
      if (count > bestCount || (count === bestCount && best !== undefined && key < best)) {
        best = key;
        bestCount = count;
      }
    }
    if (best === undefined || bestCount < minCount) break;
    const [left, right] = best.split(" ") as [string, string];
    const merged = left + right;
    if (known.has(merged)) {
      banned.add(best);
      continue;
    }
    known.add(merged);
    tokens.push(merged);
    merges.push(best);
    segmented = segmented.map(({ parts, count }) => ({ parts: applyMerge(parts, left, right), count }));
  }
  return { tokens, merges };
}

function applyMerge(parts: string[], left: string, right: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    if (parts[i] === left && parts[i + 1] === right) {
      out.push(left + right);
      i++;
    } else {
      out.push(parts[i] ?? "");
    }
  }
  return out;
}

/**
 * Encodes `text` with `vocabulary` as llama.cpp's BPE tokenizer does: GPT-2's pre-tokenizer split,
 * then within each piece the adjacent pair of lowest merge rank is merged (leftmost first) until no
 * pair has a merge.
 */
export function encodeBpe(vocabulary: BpeVocabulary, text: string): number[] {
  const byteChar = bytesToUnicode();
  const rank = new Map(vocabulary.merges.map((m, i) => [m, i]));
  const ids = new Map(vocabulary.tokens.map((t, i) => [t, i]));
  const out: number[] = [];
  for (const piece of text.match(PRETOKENIZE) ?? []) {
    let parts = [...Buffer.from(piece, "utf8")].map((b) => byteChar[b] ?? "");
    for (;;) {
      let best = -1;
      let bestRank = Number.POSITIVE_INFINITY;
      for (let i = 0; i + 1 < parts.length; i++) {
        const r = rank.get(`${parts[i]} ${parts[i + 1]}`);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      parts = [...parts.slice(0, best), `${parts[best]}${parts[best + 1]}`, ...parts.slice(best + 2)];
    }
    for (const part of parts) out.push(ids.get(part) ?? 0);
  }
  return out;
}
