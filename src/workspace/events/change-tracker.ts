/**
 * Detects changes to a workspace's config and extension files and turns them into events.
 *
 * Content hashes are the truth: a rescan compares the sha256 of every tracked file with the last
 * snapshot, so a same-content rewrite emits nothing, a burst of filesystem notifications for one
 * edit emits one event (rescans are debounced), and a write made through the server is recorded
 * once (the server commits its own event and snapshot while holding the workspace lock, so the
 * watcher's rescan that follows finds nothing new).
 *
 * The snapshot is also kept on disk after every change: a change the watcher had not reported
 * yet when the process died, or an edit made while the server was down, is found at the next start
 * by comparing the workspace with that file, and gets its event then.
 *
 * Scans read synchronously: they touch only the config and extension files (a few directory
 * listings, then each tracked file, read whole up to 8 MiB), always under the workspace lock, and a
 * synchronous read costs less than a thread-pool round trip. It also keeps start-up off the
 * runtime's I/O threads, which stay resident once woken (measured 2026-11-26: the compiled workspace
 * server idled 0.7 MB higher with its start-up scan and temp sweep on them). Only the snapshot's
 * durable write, after a change or on a workspace's first start, is asynchronous. The trade-off: a
 * workspace on a network filesystem that stops answering stalls the event loop at its next scan,
 * where a thread would have waited instead.
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, watch, type FSWatcher } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import { sha256Hex } from '../../core/sha256.ts'
import { writeFileAtomic } from '../../storage/fs.ts'
import type { AsyncLock } from '../base/async-lock.ts'
import type { EventStore, WorkspaceEvent } from './event-store.ts'
import type { ReadCache } from '../base/read-cache.ts'
import {
  classifyChange,
  OPENCODE_CONFIG_FILES,
  trackedFiles,
  watchedDirs,
  type EventTrigger,
  type ReloadReason,
} from '../config/workspace-layout.ts'

/** Dependencies of a {@link ChangeTracker}. */
export interface ChangeTrackerOptions {
  workspaceId: string
  root: string
  events: EventStore
  cache: ReadCache
  lock: AsyncLock
  logger: Logger
  /** Quiet period before a rescan after filesystem notifications (default 250 ms). */
  debounceMs?: number
  /** Watch the filesystem (default true). */
  watch?: boolean
  /** Where the last recorded snapshot is kept between runs (none: start-up emits nothing). */
  snapshotPath?: string
}

type Snapshot = Map<string, string>

/** In these directories only the named entries matter; elsewhere every entry does. */
const RELEVANT_NAMES: Record<string, Set<string>> = {
  '': new Set([...OPENCODE_CONFIG_FILES, '.opencode']),
  '.opencode': new Set(['service.json', 'skills', 'commands', 'plugins']),
}

/** Tracked files larger than this are fingerprinted by size, inode and change time, not read. */
export const HASHED_MAX_BYTES = 8 * 1024 * 1024

/**
 * What the snapshot keeps of one tracked file: the sha256 of its content, or null when it is
 * missing, unreadable or not a regular file. Opened without blocking and checked on the open
 * descriptor, so a FIFO or a device put where a tracked file belongs (a `SKILL.md` symlinked to
 * `/dev/zero`) is skipped instead of stalling the scan, which runs on the event loop. A file over
 * {@link HASHED_MAX_BYTES} is fingerprinted by its size, inode and change time (which no one can
 * set back, unlike the modification time) instead of being read: every write still shows, and so
 * does one that leaves it as it was, the one case where such a file reports an edit it did not get.
 */
export function fingerprint(path: string): string | null {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
  } catch {
    return null
  }
  try {
    const st = fstatSync(fd)
    if (!st.isFile()) return null
    if (st.size > HASHED_MAX_BYTES) return `large:${st.size}:${st.ino}:${st.ctimeMs}`
    return sha256Hex(readFileSync(fd))
  } catch {
    return null
  } finally {
    closeSync(fd)
  }
}

function scan(root: string): Snapshot {
  const snapshot: Snapshot = new Map()
  for (const rel of trackedFiles(root)) {
    const print = fingerprint(join(root, rel))
    if (print !== null) snapshot.set(rel, print)
  }
  return snapshot
}

/** The inode of the directory at `path`, or null when there is none (or it cannot be seen). */
function directoryInode(path: string): number | null {
  try {
    const st = statSync(path, { throwIfNoEntry: false })
    return st?.isDirectory() ? st.ino : null
  } catch {
    return null
  }
}

/** The persisted snapshot, or null when there is none (first start) or it cannot be read. */
function readPersisted(path: string): Snapshot | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { version?: number; files?: Record<string, unknown> }
    if (parsed.version !== 1 || typeof parsed.files !== 'object' || parsed.files === null) return null
    return new Map(Object.entries(parsed.files).filter((e): e is [string, string] => typeof e[1] === 'string'))
  } catch {
    return null
  }
}

function diff(before: Snapshot, after: Snapshot): Array<{ rel: string; action: 'added' | 'removed' | 'updated' }> {
  const changes: Array<{ rel: string; action: 'added' | 'removed' | 'updated' }> = []
  for (const [rel, hash] of after) {
    const old = before.get(rel)
    if (old === undefined) changes.push({ rel, action: 'added' })
    else if (old !== hash) changes.push({ rel, action: 'updated' })
  }
  for (const rel of before.keys()) if (!after.has(rel)) changes.push({ rel, action: 'removed' })
  return changes.sort((a, b) => (a.rel < b.rel ? -1 : 1))
}

/** Watches one workspace. */
export class ChangeTracker {
  readonly #o: ChangeTrackerOptions
  #snapshot: Snapshot = new Map()
  readonly #watchers = new Map<string, { watcher: FSWatcher; ino: number }>()
  #timer: ReturnType<typeof setTimeout> | undefined
  #closed = false
  #rescanning: Promise<void> = Promise.resolve()

  constructor(options: ChangeTrackerOptions) {
    this.#o = options
  }

  /**
   * Takes the initial snapshot and starts watching. What differs from the persisted snapshot
   * changed while no watcher was looking (the server was down, or died before its debounce
   * fired): one `disk` event per change, as the watcher would have emitted.
   */
  async start(): Promise<void> {
    const current = scan(this.#o.root)
    const path = this.#o.snapshotPath
    const persisted = path ? readPersisted(path) : null
    this.#snapshot = current
    if (persisted) {
      const changes = diff(persisted, current)
      await this.#emit(changes, 'disk')
      if (changes.length) await this.#persist()
    } else if (path) {
      await this.#persist()
    }
    if (this.#o.watch !== false) this.#refreshWatches()
  }

  /** Writes the snapshot where the next start will compare against it (failures only logged). */
  async #persist(): Promise<void> {
    const path = this.#o.snapshotPath
    if (!path) return
    try {
      await mkdir(join(path, '..'), { recursive: true, mode: 0o700 })
      await writeFileAtomic(path, JSON.stringify({ version: 1, files: Object.fromEntries(this.#snapshot) }), {
        mode: 0o600,
      })
    } catch (error) {
      this.#o.logger.warn('workspace snapshot not saved', { workspaceId: this.#o.workspaceId, error })
    }
  }

  async #emit(changes: ReturnType<typeof diff>, source: 'server' | 'disk'): Promise<void> {
    for (const change of changes) {
      const { reason, trigger } = classifyChange(change.rel, change.action)
      await this.#o.events.append({ workspaceId: this.#o.workspaceId, type: 'reload', reason, trigger, source })
    }
  }

  /**
   * Records a server write. The caller holds the workspace lock. Emits one event with the given
   * reason when any tracked content changed, none for a no-op write.
   */
  async commit(reason: ReloadReason, trigger: EventTrigger): Promise<WorkspaceEvent | null> {
    this.#o.cache.invalidate()
    const next = scan(this.#o.root)
    const changed = diff(this.#snapshot, next).length > 0
    this.#snapshot = next
    if (!changed) return null
    const event = await this.#o.events.append({
      workspaceId: this.#o.workspaceId,
      type: 'reload',
      reason,
      trigger,
      source: 'server',
    })
    await this.#persist()
    return event
  }

  /**
   * Runs a rescan now: the debounce timer (`disk`), and file-session writes (`server`), which await
   * it so their config and extension events exist before the write is acknowledged.
   */
  rescan(source: 'server' | 'disk' = 'disk'): Promise<void> {
    const run = this.#rescanning.then(() =>
      this.#o.lock.run(async () => {
        if (this.#closed) return
        const next = scan(this.#o.root)
        const changes = diff(this.#snapshot, next)
        this.#snapshot = next
        if (changes.length) this.#o.cache.invalidate()
        await this.#emit(changes, source)
        if (changes.length) await this.#persist()
      }),
    )
    this.#rescanning = run.catch((error) => {
      this.#o.logger.warn('workspace rescan failed', { workspaceId: this.#o.workspaceId, error })
    })
    return run
  }

  #onNotify = () => {
    if (this.#closed) return
    // Invalidate at once so a read right after an edit never serves the old parse.
    this.#o.cache.invalidate()
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      try {
        this.#refreshWatches()
      } catch (error) {
        this.#o.logger.warn('workspace watch refresh failed', { workspaceId: this.#o.workspaceId, error })
      }
      this.rescan().catch(() => {})
    }, this.#o.debounceMs ?? 250)
  }

  #refreshWatches(): void {
    if (this.#closed) return
    const wanted = new Set(watchedDirs(this.#o.root))
    let added = false
    for (const rel of wanted) {
      // A directory deleted and re-created is a new inode: the old watcher would hear nothing.
      const ino = directoryInode(join(this.#o.root, rel))
      const current = this.#watchers.get(rel)
      if (current && current.ino === ino) continue
      if (current) {
        current.watcher.close()
        this.#watchers.delete(rel)
      }
      if (ino === null || this.#closed) continue
      try {
        const relevant = RELEVANT_NAMES[rel]
        // The root and `.opencode` hold unrelated files too; their churn must not flush the cache.
        const watcher = watch(join(this.#o.root, rel), { persistent: false }, (_event, name) => {
          if (!relevant || name === null || relevant.has(String(name))) this.#onNotify()
        })
        watcher.on('error', () => {
          watcher.close()
          this.#watchers.delete(rel)
          this.#onNotify()
        })
        this.#watchers.set(rel, { watcher, ino })
        added = true
      } catch {
        // The directory vanished between stat and watch; the parent's watcher will notice.
      }
    }
    for (const [rel, entry] of this.#watchers) {
      if (!wanted.has(rel)) {
        entry.watcher.close()
        this.#watchers.delete(rel)
      }
    }
    // Files created before a new directory's watcher existed are caught by the rescan that follows
    // every refresh after start-up (and at start-up, by the scan before it).
    if (added) this.#o.cache.invalidate()
  }

  /** Stops watching. */
  close(): void {
    this.#closed = true
    if (this.#timer) clearTimeout(this.#timer)
    for (const entry of this.#watchers.values()) entry.watcher.close()
    this.#watchers.clear()
  }
}
