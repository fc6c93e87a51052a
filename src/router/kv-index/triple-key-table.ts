const EMPTY = -1;
const STRIDE = 4;

/**
 * An open-addressing hash table from `(a, hi, lo)` — a small non-negative int and a u64 split in
 * two u32 halves — to a non-negative int, in one Int32Array: linear probing, deletion by backward
 * shift (no tombstones), doubling at half load. The KV index keeps millions of entries in it
 * without allocating an object (or a bigint) per entry.
 */
export class TripleKeyTable {
  #slots: Int32Array;
  #mask: number;
  #size = 0;

  constructor(initialCapacity = 1024) {
    let capacity = 16;
    while (capacity < initialCapacity) capacity *= 2;
    this.#slots = new Int32Array(capacity * STRIDE).fill(EMPTY);
    this.#mask = capacity - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** The value stored for the key, or -1. */
  get(a: number, hi: number, lo: number): number {
    const at = this.#find(a, hi | 0, lo | 0);
    return at < 0 ? -1 : (this.#slots[at + 3] as number);
  }

  /** Sets the value; true when the key was new. */
  set(a: number, hi: number, lo: number, value: number): boolean {
    return this.put(a, hi, lo, value) === -1;
  }

  /** Sets the value and returns the one it replaced, or -1 when the key was new (one probe). */
  put(a: number, hi: number, lo: number, value: number): number {
    const at = this.#findOrInsert(a, hi | 0, lo | 0, value);
    if (at < 0) return -1;
    const previous = this.#slots[at + 3] as number;
    this.#slots[at + 3] = value;
    return previous;
  }

  /**
   * The value stored for the key; when there is none, stores `value` and returns -1 — one probe
   * where `get` then `set` take two.
   */
  getOrSet(a: number, hi: number, lo: number, value: number): number {
    const at = this.#findOrInsert(a, hi | 0, lo | 0, value);
    return at < 0 ? -1 : (this.#slots[at + 3] as number);
  }

  /**
   * The offset of the key's entry; when there is none, inserts it with `value` (growing first if
   * needed) and returns a negative number.
   */
  #findOrInsert(a: number, h: number, l: number, value: number): number {
    if ((this.#size + 1) * 2 > this.#mask + 1) this.#grow();
    const found = this.#find(a, h, l);
    if (found >= 0) return found;
    const slots = this.#slots;
    const at = ~found;
    slots[at] = a;
    slots[at + 1] = h;
    slots[at + 2] = l;
    slots[at + 3] = value;
    this.#size++;
    return -1;
  }

  /** Removes the key; true when it was there. */
  delete(a: number, hi: number, lo: number): boolean {
    return this.take(a, hi, lo) !== -1;
  }

  /** Removes the key and returns its value, or -1 when it was not there (one probe). */
  take(a: number, hi: number, lo: number): number {
    const found = this.#find(a, hi | 0, lo | 0);
    if (found < 0) return -1;
    const slots = this.#slots;
    const mask = this.#mask;
    const value = slots[found + 3] as number;
    let i = found / STRIDE;
    // Backward shift: pull later entries of the probe run into the hole when their home allows it.
    for (let j = (i + 1) & mask; ; j = (j + 1) & mask) {
      const at = j * STRIDE;
      const key = slots[at] as number;
      if (key === EMPTY) break;
      const k = home(key, slots[at + 1] as number, slots[at + 2] as number) & mask;
      const between = i <= j ? i < k && k <= j : i < k || k <= j;
      if (between) continue;
      const to = i * STRIDE;
      slots[to] = key;
      slots[to + 1] = slots[at + 1] as number;
      slots[to + 2] = slots[at + 2] as number;
      slots[to + 3] = slots[at + 3] as number;
      i = j;
    }
    slots[i * STRIDE] = EMPTY;
    this.#size--;
    return value;
  }

  /**
   * Linear probe for the key (`hi`, `lo` already as int32): the offset of its entry, or the
   * bitwise complement (negative) of the offset of the empty slot where it would go.
   */
  #find(a: number, h: number, l: number): number {
    const slots = this.#slots;
    for (let i = home(a, h, l) & this.#mask; ; i = (i + 1) & this.#mask) {
      const at = i * STRIDE;
      const key = slots[at] as number;
      if (key === EMPTY) return ~at;
      if (key === a && slots[at + 1] === h && slots[at + 2] === l) return at;
    }
  }

  /** Calls `visit(hi, lo, value)` for every entry whose first key part is `a` (a full scan). */
  forEachOf(a: number, visit: (hi: number, lo: number, value: number) => void): void {
    const slots = this.#slots;
    for (let at = 0; at < slots.length; at += STRIDE) {
      if (slots[at] === a) visit(slots[at + 1] as number, slots[at + 2] as number, slots[at + 3] as number);
    }
  }

  /** Grows now, once, to hold `entries` without growing again. */
  reserve(entries: number): void {
    let capacity = this.#mask + 1;
    while (entries * 2 > capacity) capacity *= 2;
    if (capacity > this.#mask + 1) this.#rehash(capacity);
  }

  #grow(): void {
    this.#rehash((this.#mask + 1) * 2);
  }

  #rehash(capacity: number): void {
    const old = this.#slots;
    this.#slots = new Int32Array(capacity * STRIDE).fill(EMPTY);
    this.#mask = capacity - 1;
    const slots = this.#slots;
    const mask = this.#mask;
    // Keys are distinct: each goes to the first empty slot of its probe run, with no comparison.
    for (let at = 0; at < old.length; at += STRIDE) {
      const key = old[at] as number;
      if (key === EMPTY) continue;
      const hi = old[at + 1] as number;
      const lo = old[at + 2] as number;
      let i = home(key, hi, lo) & mask;
      while (slots[i * STRIDE] !== EMPTY) i = (i + 1) & mask;
      const to = i * STRIDE;
      slots[to] = key;
      slots[to + 1] = hi;
      slots[to + 2] = lo;
      slots[to + 3] = old[at + 3] as number;
    }
  }
}

/** Mixes the three key parts (the u64 halves are already well spread: they are XXH3 outputs). */
function home(a: number, hi: number, lo: number): number {
  let h = Math.imul(a ^ lo, 0x9e3779b1) ^ hi;
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
