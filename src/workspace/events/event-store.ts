/**
 * Persisted workspace events: reload events (config and extension changes, from the server or
 * from disk) and approval events. Every event gets a global `seq`, which is the SSE `id:` and the
 * polling cursor, so a client resuming with `Last-Event-ID` or `?since=` misses nothing. Events
 * survive restarts; retention keeps the newest `retention` events per workspace.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { StateDatabase } from '../runtime/state-db.ts'

/** Why a reload event happened (the reference's `reason`). */
export type ReloadReason = 'config' | 'plugins' | 'skills' | 'mcp' | 'commands'

/** What changed. */
export interface EventTrigger {
  type: 'config' | 'plugin' | 'skill' | 'mcp' | 'command'
  name?: string
  action?: 'added' | 'removed' | 'updated'
  /** Workspace-relative path of the file that changed. */
  path?: string
}

/** Event kinds. */
export type WorkspaceEventType = 'reload' | 'approval.requested' | 'approval.decided'

/** The type-specific part of an event. */
export interface EventBody {
  workspaceId: string
  type: WorkspaceEventType
  reason?: ReloadReason
  trigger?: EventTrigger
  /** `server` for writes through this API, `disk` for changes the watcher found. */
  source?: 'server' | 'disk'
  approval?: Record<string, unknown>
  decision?: Record<string, unknown>
}

/** One stored event as clients see it. */
export interface WorkspaceEvent extends EventBody {
  id: string
  seq: number
  timestamp: number
}

type Listener = (event: WorkspaceEvent) => void

/** The event log over the state database, with in-process subscribers for live streams. */
export class EventStore {
  readonly #db: StateDatabase
  readonly #now: () => number
  readonly #retention: number
  readonly #listeners = new Set<Listener>()
  #chain: Promise<unknown> = Promise.resolve()
  #appendsSincePrune = 0

  constructor(db: StateDatabase, options: { retention?: number; now?: () => number } = {}) {
    this.#db = db
    this.#retention = options.retention ?? 1000
    this.#now = options.now ?? Date.now
  }

  /**
   * Stores an event and notifies subscribers. Appends are serialised so subscribers always see
   * increasing `seq` (replay-then-follow drops anything at or below what it already sent).
   */
  append(body: EventBody): Promise<WorkspaceEvent> {
    const run = this.#chain.then(() => this.#insert(body))
    this.#chain = run.catch(() => {})
    return run
  }

  async #insert(body: EventBody): Promise<WorkspaceEvent> {
    const timestamp = this.#now()
    const id = newId('evt', timestamp)
    const { workspaceId, type, ...rest } = body
    const row = await this.#db.db
      .insertInto('events')
      .values({
        id,
        workspace_id: workspaceId,
        type,
        payload: JSON.stringify(rest),
        created_at: new Date(timestamp).toISOString(),
      })
      .returning('seq')
      .executeTakeFirstOrThrow()
    const event: WorkspaceEvent = { id, seq: Number(row.seq), timestamp, ...body }
    if (++this.#appendsSincePrune >= 64) {
      this.#appendsSincePrune = 0
      await this.prune(workspaceId)
    }
    for (const listener of [...this.#listeners]) {
      try {
        listener(event)
      } catch {
        /* a failing subscriber must not break the writer */
      }
    }
    return event
  }

  /** Drops events beyond the retention limit for one workspace. */
  async prune(workspaceId: string): Promise<void> {
    const cutoff = await this.#db.db
      .selectFrom('events')
      .select('seq')
      .where('workspace_id', '=', workspaceId)
      .orderBy('seq', 'desc')
      .limit(1)
      .offset(this.#retention - 1)
      .executeTakeFirst()
    if (cutoff?.seq)
      await this.#db.db
        .deleteFrom('events')
        .where('workspace_id', '=', workspaceId)
        .where('seq', '<', cutoff.seq)
        .execute()
  }

  /** Events after `after` in seq order, optionally for one workspace and some types. */
  async list(options: {
    after: number
    workspaceId?: string
    types?: WorkspaceEventType[]
    limit?: number
  }): Promise<WorkspaceEvent[]> {
    let query = this.#db.db.selectFrom('events').selectAll().where('seq', '>', options.after)
    if (options.workspaceId) query = query.where('workspace_id', '=', options.workspaceId)
    if (options.types) query = query.where('type', 'in', options.types)
    const rows = await query
      .orderBy('seq', 'asc')
      .limit(options.limit ?? 1000)
      .execute()
    return rows.map((row) => ({
      id: row.id,
      seq: Number(row.seq),
      timestamp: Date.parse(row.created_at),
      workspaceId: row.workspace_id,
      type: row.type as WorkspaceEventType,
      ...(JSON.parse(row.payload) as Omit<EventBody, 'workspaceId' | 'type'>),
    }))
  }

  /** The newest seq stored (0 when empty). */
  async latestSeq(): Promise<number> {
    const row = await this.#db.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('seq').as('seq'))
      .executeTakeFirst()
    return Number(row?.seq ?? 0)
  }

  /** Subscribes to new events; returns the unsubscribe function. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /** Waits for in-flight appends (used on shutdown). */
  async drain(): Promise<void> {
    await this.#chain
  }
}
