/**
 * A context-free grammar over Unicode code points, as armature builds it before writing it out as
 * llama.cpp GBNF (`gbnf.ts`) or matching text against it in tests (`grammar-matcher.ts`).
 */
export type GrammarNode =
  | { readonly k: "lit"; readonly text: string }
  /** One code point in (or, negated, outside) the inclusive ranges. */
  | { readonly k: "class"; readonly ranges: readonly (readonly [number, number])[]; readonly negated: boolean }
  | { readonly k: "seq"; readonly items: readonly GrammarNode[] }
  | { readonly k: "alt"; readonly items: readonly GrammarNode[] }
  /** `max` undefined: unbounded. */
  | { readonly k: "rep"; readonly item: GrammarNode; readonly min: number; readonly max: number | undefined }
  | { readonly k: "ref"; readonly name: string };

export interface Grammar {
  /** Named rules; `root` is where matching starts. */
  readonly rules: ReadonlyMap<string, GrammarNode>;
}

export const lit = (text: string): GrammarNode => ({ k: "lit", text });
export const seq = (...items: GrammarNode[]): GrammarNode =>
  items.length === 1 ? (items[0] as GrammarNode) : { k: "seq", items };
export const alt = (...items: GrammarNode[]): GrammarNode =>
  items.length === 1 ? (items[0] as GrammarNode) : { k: "alt", items };
export const rep = (item: GrammarNode, min: number, max: number | undefined): GrammarNode => ({ k: "rep", item, min, max });
export const ref = (name: string): GrammarNode => ({ k: "ref", name });
export const opt = (item: GrammarNode): GrammarNode => rep(item, 0, 1);
export const EMPTY: GrammarNode = { k: "lit", text: "" };

/** A class of code points from characters and `[lo, hi]` pairs of characters. */
export function charClass(spec: readonly (string | readonly [string, string])[], negated = false): GrammarNode {
  const ranges = spec.flatMap((s): [number, number][] =>
    typeof s === "string"
      ? [...s].map((c) => [c.codePointAt(0) as number, c.codePointAt(0) as number])
      : [[s[0].codePointAt(0) as number, s[1].codePointAt(0) as number]],
  );
  return { k: "class", ranges, negated };
}

/**
 * Node count, a bounded repetition counted as the copies of its item llama.cpp writes it out as
 * (`x{3,5}` is five of `x`): what bounds the cost of a grammar to the engine that parses it.
 */
export function grammarSize(grammar: Grammar): number {
  const size = (node: GrammarNode): number => {
    if (node.k === "seq" || node.k === "alt") return node.items.reduce((sum, item) => sum + size(item), 1);
    if (node.k === "rep") return 1 + size(node.item) * Math.max(1, node.max ?? node.min);
    return 1;
  };
  let total = 0;
  for (const node of grammar.rules.values()) total += size(node);
  return total;
}
