/**
 * A few seconds of memory for rendered sets served under a capability URL: OpenCode reads
 * `index.json` and then each file of each skill in separate requests, and rendering the whole set
 * for every file would cost the set's size times its file count. Entries live `ttlMs` and the
 * cache holds at most `maxEntries` (the oldest go first). The index is always read fresh (and
 * refreshes the entry), so each OpenCode start sees the current set and its files match it.
 * @module
 */

/** A small time-bounded cache of promises by key. */
export class SetCache<T> {
  readonly #entries = new Map<string, { expires: number; value: Promise<T> }>()

  constructor(
    private readonly now: () => number,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 256,
  ) {}

  /** The cached value for `key`, or `load()`'s (a failed load is not kept); `fresh` always loads. */
  get(key: string, load: () => Promise<T>, fresh = false): Promise<T> {
    const now = this.now()
    const hit = this.#entries.get(key)
    if (hit && hit.expires > now && !fresh) return hit.value
    this.#entries.delete(key)
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
    const value = load()
    this.#entries.set(key, { expires: now + this.ttlMs, value })
    value.catch(() => {
      if (this.#entries.get(key)?.value === value) this.#entries.delete(key)
    })
    return value
  }

  /** Forgets `key` (its capability stopped working). */
  drop(key: string): void {
    this.#entries.delete(key)
  }
}
