/**
 * The configured workspaces at run time: each with its read cache, write lock and change
 * tracker. Clients learn ids only from `GET /workspaces`; an unknown id is 404
 * `workspace_not_found`.
 * @module
 */
import { join } from 'node:path'
import type { Logger } from '../../core/logger.ts'
import { AsyncLock } from '../base/async-lock.ts'
import { ChangeTracker } from '../events/change-tracker.ts'
import type { EventStore } from '../events/event-store.ts'
import type { WorkspaceRuntime } from '../events/workspace-runtime.ts'
import { ReadCache } from '../base/read-cache.ts'
import { sweepTempFiles } from './temp-sweep.ts'
import type { WorkspaceEntry } from '../config/server-config.ts'
import { workspaceError } from '../workspace-errors.ts'

/** The public description of a workspace: no sidecar credentials, no raw config entry. */
export interface WorkspaceView {
  id: string
  name: string
  path: string
  workspaceType: 'local'
}

/** Serialises a workspace for clients. */
export function workspaceView(entry: WorkspaceEntry): WorkspaceView {
  return { id: entry.id, name: entry.name, path: entry.path, workspaceType: 'local' }
}

/** All workspaces of this server, in configured order (the first is the active one). */
export class WorkspaceRegistry {
  readonly #byId = new Map<string, WorkspaceRuntime>()

  private constructor(readonly all: readonly WorkspaceRuntime[]) {
    for (const ws of all) this.#byId.set(ws.entry.id, ws)
  }

  /** Builds runtimes and starts their change trackers. */
  static async start(
    entries: readonly WorkspaceEntry[],
    deps: {
      events: EventStore
      logger: Logger
      debounceMs?: number
      watch?: boolean
      /** Directory of the per-workspace snapshots compared at start (see ChangeTracker). */
      snapshotDir?: string
    },
  ): Promise<WorkspaceRegistry> {
    const runtimes = entries.map((entry) => {
      const cache = new ReadCache()
      const lock = new AsyncLock()
      const tracker = new ChangeTracker({
        workspaceId: entry.id,
        root: entry.path,
        events: deps.events,
        cache,
        lock,
        logger: deps.logger,
        debounceMs: deps.debounceMs,
        watch: deps.watch,
        snapshotPath: deps.snapshotDir ? join(deps.snapshotDir, `${entry.id}.json`) : undefined,
      })
      return { entry, cache, lock, tracker }
    })
    await Promise.all(runtimes.map((r) => r.tracker.start()))
    const registry = new WorkspaceRegistry(runtimes)
    // In the background: a large workspace must not delay listening, and nothing of ours that is in
    // flight can match (only files older than this process are removed).
    registry.swept = Promise.all(
      entries.map(async (entry) => {
        const removed = await sweepTempFiles(entry.path).catch(() => [])
        if (removed.length)
          deps.logger.info('removed temp files left by interrupted writes', {
            workspaceId: entry.id,
            count: removed.length,
          })
        return removed.length
      }),
    ).then((counts) => counts.reduce((a, b) => a + b, 0))
    return registry
  }

  /** Resolves with how many leftover temp files the start-up sweep removed. */
  swept: Promise<number> = Promise.resolve(0)

  /** The workspace with `id`, or 404. */
  get(id: string): WorkspaceRuntime {
    const ws = this.#byId.get(id)
    if (!ws) throw workspaceError('workspace_not_found', 'Workspace not found')
    return ws
  }

  /** Stops every tracker. */
  close(): void {
    for (const ws of this.all) ws.tracker.close()
  }
}
