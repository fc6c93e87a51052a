/** An entry that can sit in an `LruList` (the list keeps its links on it). */
export interface LruEntry {
  older: LruEntry | undefined;
  newer: LruEntry | undefined;
  /** Whether the entry is in a list now. */
  listed: boolean;
}

/**
 * Entries in order of use, oldest first, linked through the entries themselves: adding, removing
 * and taking the oldest allocate nothing and hash nothing (a `Map` keyed by block hash did both on
 * every release of a block).
 */
export class LruList<T extends LruEntry> {
  #oldest: T | undefined;
  #newest: T | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds an entry as the newest; one already listed stays where it is. */
  add(entry: T): void {
    if (entry.listed) return;
    entry.listed = true;
    entry.older = this.#newest;
    entry.newer = undefined;
    if (this.#newest) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
    this.#size++;
  }

  /** Takes an entry out; nothing when it is not listed. */
  remove(entry: T): void {
    if (!entry.listed) return;
    entry.listed = false;
    if (entry.older) entry.older.newer = entry.newer;
    else this.#oldest = entry.newer as T | undefined;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older as T | undefined;
    entry.older = undefined;
    entry.newer = undefined;
    this.#size--;
  }

  /** The least recently added entry. */
  oldest(): T | undefined {
    return this.#oldest;
  }

  /** Takes every entry out, oldest first. */
  *drain(): Generator<T> {
    for (let entry = this.#oldest; entry; entry = this.#oldest) {
      this.remove(entry);
      yield entry;
    }
  }
}
