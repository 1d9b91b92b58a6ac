/**
 * Base64 content of recently read small files, served again while the file is provably unchanged.
 *
 * Why: clients that sync a workspace re-read the same files again and again, and a read costs an
 * open, a descriptor check, a read and an encode, where proving the file unchanged costs one
 * lstat. An entry is only ever filled from a read that passed every containment check, and it is
 * served only while an lstat of the same real path shows the same device, inode, size, mtime and
 * ctime (a filesystem mounted over the path is another device).
 * ctime cannot be set by a client (any change to the file sets it to the current time), so a write
 * by anyone, through this server or not, misses the cache.
 *
 * Linux stamps files with a coarse clock, so two writes a few milliseconds apart can carry the same
 * times. Files changed within the last {@link SETTLE_MS} are therefore not cached at all (the same
 * rule git applies to "racily clean" index entries).
 * @module
 */
import type { Stats } from 'node:fs'

/** Files whose ctime is younger than this are read every time. */
export const SETTLE_MS = 2_000

/**
 * What an entry costs beyond its base64 and its key, in the same units (characters): the entry
 * object, its map slot and the stat fields. Charging it means empty files, whose base64 is empty,
 * still count, so a client reading many distinct tiny files cannot grow the map without bound.
 */
export const ENTRY_OVERHEAD = 256

interface Entry {
  dev: number
  ino: number
  size: number
  mtimeMs: number
  ctimeMs: number
  base64: string
}

/** A least-recently-used map from real path to base64 content, bounded by what its entries cost. */
export class FileContentCache {
  readonly #entries = new Map<string, Entry>()
  readonly #maxChars: number
  readonly #maxEntryChars: number
  readonly #now: () => number
  #chars = 0

  /**
   * `maxBytes` bounds what entries cost (base64, key and {@link ENTRY_OVERHEAD} each; 0 disables
   * the cache); one entry may take an eighth.
   */
  constructor(maxBytes: number, now: () => number = Date.now) {
    this.#maxChars = maxBytes
    this.#maxEntryChars = Math.floor(maxBytes / 8)
    this.#now = now
  }

  get enabled(): boolean {
    return this.#maxChars > 0
  }

  /** The cached base64 of `realPath` if `st` (a fresh lstat) shows the file unchanged. */
  get(realPath: string, st: Stats): string | undefined {
    const entry = this.#entries.get(realPath)
    if (!entry) return undefined
    if (
      entry.ino !== st.ino ||
      entry.dev !== st.dev ||
      entry.size !== st.size ||
      entry.mtimeMs !== st.mtimeMs ||
      entry.ctimeMs !== st.ctimeMs
    ) {
      this.#drop(realPath, entry)
      return undefined
    }
    // Re-insert so Map order stays least-recently-used first.
    this.#entries.delete(realPath)
    this.#entries.set(realPath, entry)
    return entry.base64
  }

  /** Remembers content read under `st` (the descriptor's fstat), unless the file changed too recently. */
  set(realPath: string, st: Stats, base64: string): void {
    if (cost(realPath, base64) > this.#maxEntryChars || this.#now() - st.ctimeMs < SETTLE_MS) return
    const old = this.#entries.get(realPath)
    if (old) this.#drop(realPath, old)
    this.#entries.set(realPath, {
      dev: st.dev,
      ino: st.ino,
      size: st.size,
      mtimeMs: st.mtimeMs,
      ctimeMs: st.ctimeMs,
      base64,
    })
    this.#chars += cost(realPath, base64)
    for (const [key, entry] of this.#entries) {
      if (this.#chars <= this.#maxChars) break
      this.#drop(key, entry)
    }
  }

  /** Forgets everything (shutdown, tests). */
  clear(): void {
    this.#entries.clear()
    this.#chars = 0
  }

  /** Entries held and what they cost (characters), for tests and diagnostics. */
  get size(): { entries: number; chars: number } {
    return { entries: this.#entries.size, chars: this.#chars }
  }

  #drop(key: string, entry: Entry): void {
    this.#entries.delete(key)
    this.#chars -= cost(key, entry.base64)
  }
}

function cost(key: string, base64: string): number {
  return key.length + base64.length + ENTRY_OVERHEAD
}
