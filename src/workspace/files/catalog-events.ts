/**
 * File catalog events (`write | delete | rename | mkdir`) per workspace, for clients that keep a
 * mirror with snapshot + events. Unlike the reference, which records only writes made through the
 * server, a watcher also reports changes other programs make on disk, so the mirror stays exact.
 *
 * Events live in memory in a bounded ring. `seq` starts from the start-up time in microseconds,
 * so cursors from an earlier process are always older than anything current: a cursor older than
 * the ring (dropped events, or a restart) is answered with `resync: true`, telling the client to
 * take a new snapshot instead of silently missing changes.
 * @module
 */
import { watch, type FSWatcher } from 'node:fs'
import { lstat } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import { newId } from '../../core/ids.ts'
import { isTempName } from '../base/workspace-path.ts'

/** Event kinds. */
export type CatalogEventType = 'write' | 'delete' | 'rename' | 'mkdir'

/** One catalog event. */
export interface CatalogEvent {
  id: string
  seq: number
  workspaceId: string
  type: CatalogEventType
  path: string
  toPath?: string
  /** `floor(mtimeMs):size` of the file after a write (as in catalog items). */
  revision?: string
  /** `server` for writes through this API, `disk` for changes the watcher found. */
  source: 'server' | 'disk'
  timestamp: number
}

/** A page of events. */
export interface CatalogEventPage {
  items: CatalogEvent[]
  cursor: number
  /** True when events after `since` were dropped (ring overflow or restart): take a new snapshot. */
  resync: boolean
}

/** The revision string of a file, as catalog items and batch results report it. */
export function revisionOf(stat: { mtimeMs: number; size: number }): string {
  return `${Math.floor(stat.mtimeMs)}:${stat.size}`
}

type Known = string | 'dir' | 'gone'
const KNOWN_LIMIT = 50_000

/** The event log of one workspace, with its optional watcher. */
export class CatalogEventLog {
  readonly workspaceId: string
  readonly #root: string
  readonly #retention: number
  readonly #now: () => number
  readonly #debounceMs: number
  readonly #log: Logger
  readonly #ring: CatalogEvent[] = []
  readonly #listeners = new Set<(e: CatalogEvent) => void>()
  /** Last state we reported per path, so the watcher does not repeat a server write. */
  readonly #known = new Map<string, Known>()
  readonly #base: number
  #seq: number
  #watcher: FSWatcher | undefined
  #pending = new Set<string>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #flushing: Promise<void> = Promise.resolve()

  constructor(options: {
    workspaceId: string
    root: string
    retention: number
    debounceMs: number
    now: () => number
    logger: Logger
  }) {
    this.workspaceId = options.workspaceId
    this.#root = options.root
    this.#retention = options.retention
    this.#debounceMs = options.debounceMs
    this.#now = options.now
    this.#log = options.logger
    this.#base = Date.now() * 1000
    this.#seq = this.#base
  }

  /** The newest seq (the cursor a snapshot hands out). */
  get cursor(): number {
    return this.#seq
  }

  /** Appends an event and notifies live streams. */
  append(input: {
    type: CatalogEventType
    path: string
    toPath?: string
    revision?: string
    source: 'server' | 'disk'
  }): CatalogEvent {
    const timestamp = this.#now()
    const event: CatalogEvent = {
      id: newId('fev', timestamp),
      seq: ++this.#seq,
      workspaceId: this.workspaceId,
      ...input,
      timestamp,
    }
    this.#ring.push(event)
    if (this.#ring.length > this.#retention) this.#ring.splice(0, this.#ring.length - this.#retention)
    if (input.type === 'delete') this.#remember(input.path, 'gone')
    else if (input.type === 'mkdir') this.#remember(input.path, 'dir')
    else if (input.type === 'write' && input.revision) this.#remember(input.path, input.revision)
    else if (input.type === 'rename') {
      this.#remember(input.path, 'gone')
      if (input.toPath) this.#remember(input.toPath, input.revision ?? 'dir')
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(event)
      } catch {
        /* a failing stream must not break the writer */
      }
    }
    return event
  }

  /** Events after `since`. */
  list(since: number, limit: number): CatalogEventPage {
    const oldest = this.#ring[0]?.seq ?? this.#seq + 1
    const resync = since < this.#base || (since < oldest - 1 && since < this.#seq)
    const start = this.#ring.findIndex((e) => e.seq > since)
    const items = start < 0 ? [] : this.#ring.slice(start, start + limit)
    const cursor = items.length ? items[items.length - 1]!.seq : Math.max(since, this.#seq)
    return { items, cursor, resync }
  }

  /** Subscribes to new events. */
  subscribe(listener: (e: CatalogEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  #remember(path: string, state: Known): void {
    this.#known.delete(path)
    this.#known.set(path, state)
    if (this.#known.size > KNOWN_LIMIT) this.#known.delete(this.#known.keys().next().value!)
  }

  /** True while the watcher runs. */
  get watching(): boolean {
    return this.#watcher !== undefined
  }

  /** Starts watching the workspace tree for changes by other programs (idempotent). */
  startWatching(): void {
    if (this.#watcher) return
    try {
      this.#watcher = watch(this.#root, { recursive: true, persistent: false }, (_event, name) => {
        if (name === null) return
        const rel = String(name).replace(/\\/g, '/')
        if (rel.split('/').some(isTempName)) return
        this.#pending.add(rel)
        if (this.#timer) clearTimeout(this.#timer)
        this.#timer = setTimeout(() => {
          this.#timer = undefined
          void this.flush()
        }, this.#debounceMs)
      })
      this.#watcher.on('error', (error) => {
        this.#log.warn('catalog watcher failed; clients will need a new snapshot', {
          workspaceId: this.workspaceId,
          error,
        })
        this.stopWatching()
      })
    } catch (error) {
      this.#log.warn('catalog watcher could not start', { workspaceId: this.workspaceId, error })
    }
  }

  /** Stops watching. */
  stopWatching(): void {
    this.#watcher?.close()
    this.#watcher = undefined
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#pending.clear()
  }

  /** Turns pending notifications into events now (the debounce timer calls this). */
  flush(): Promise<void> {
    const run = this.#flushing.then(() => this.#flushOnce())
    this.#flushing = run.catch((error) => {
      this.#log.warn('catalog watcher scan failed', { workspaceId: this.workspaceId, error })
    })
    return run
  }

  #ancestorGone(rel: string): boolean {
    const parts = rel.split('/')
    for (let i = 1; i < parts.length; i++) if (this.#known.get(parts.slice(0, i).join('/')) === 'gone') return true
    return false
  }

  async #flushOnce(): Promise<void> {
    const paths = [...this.#pending].sort()
    this.#pending.clear()
    const gone: string[] = []
    const written: Array<{ rel: string; revision: string }> = []
    const made: string[] = []
    for (const rel of paths) {
      const st = await lstat(join(this.#root, rel)).catch(() => null)
      const known = this.#known.get(rel)
      if (!st) {
        if (known !== 'gone' && !this.#ancestorGone(rel)) gone.push(rel)
      } else if (st.isDirectory()) {
        if (known !== 'dir') made.push(rel)
      } else if (st.isFile()) {
        const revision = revisionOf(st)
        if (known !== revision) written.push({ rel, revision })
      }
    }
    // A vanished path whose last known revision reappears once elsewhere is a move (`mv`).
    for (const from of gone) {
      const before = this.#known.get(from)
      const match = before && before !== 'dir' ? written.filter((w) => w.revision === before) : []
      if (match.length === 1) {
        written.splice(written.indexOf(match[0]!), 1)
        this.append({ type: 'rename', path: from, toPath: match[0]!.rel, revision: match[0]!.revision, source: 'disk' })
      } else {
        this.append({ type: 'delete', path: from, source: 'disk' })
      }
    }
    for (const rel of made) this.append({ type: 'mkdir', path: rel, source: 'disk' })
    for (const w of written) this.append({ type: 'write', path: w.rel, revision: w.revision, source: 'disk' })
  }
}
