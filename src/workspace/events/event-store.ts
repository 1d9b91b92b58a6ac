/**
 * Persisted workspace events: reload events (config and extension changes, from the server or
 * from disk) and approval events. Every event gets a global `seq`, which is the SSE `id:` and the
 * polling cursor, so a client resuming with `Last-Event-ID` or `?since=` misses nothing. Events
 * survive restarts; retention keeps the newest `retention` events per workspace.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { EventsTable, StateDatabase } from '../base/state-db.ts'
import type { EventTrigger, ReloadReason } from '../config/workspace-layout.ts'

/** Event kinds. */
export type WorkspaceEventType = 'reload' | 'approval.requested' | 'approval.decided' | 'org.state' | 'org.applied'

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
  /** Organization link: the new state (`org.state`) or what a change set did (`org.applied`). */
  org?: Record<string, unknown>
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
    const row = this.#db.first<{ seq: number }>(
      'insert into events (id, workspace_id, type, payload, created_at) values (?, ?, ?, ?, ?) returning seq',
      [id, workspaceId, type, JSON.stringify(rest), new Date(timestamp).toISOString()],
    )!
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
    const cutoff = this.#db.first<{ seq: number }>(
      'select seq from events where workspace_id = ? order by seq desc limit 1 offset ?',
      [workspaceId, this.#retention - 1],
    )
    if (cutoff?.seq) this.#db.run('delete from events where workspace_id = ? and seq < ?', [workspaceId, cutoff.seq])
  }

  /** Events after `after` in seq order, optionally for one workspace and some types. */
  async list(options: {
    after: number
    workspaceId?: string
    types?: WorkspaceEventType[]
    limit?: number
  }): Promise<WorkspaceEvent[]> {
    let sql = 'select * from events where seq > ?'
    const params: unknown[] = [options.after]
    if (options.workspaceId) {
      sql += ' and workspace_id = ?'
      params.push(options.workspaceId)
    }
    if (options.types) {
      // One placeholder per type; an empty list matches nothing, as `in ()` would.
      sql += options.types.length ? ` and type in (${options.types.map(() => '?').join(', ')})` : ' and 0'
      params.push(...options.types)
    }
    params.push(options.limit ?? 1000)
    const rows = this.#db.all<EventsTable>(`${sql} order by seq asc limit ?`, params)
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
    const row = this.#db.first<{ seq: number | null }>('select max(seq) as seq from events')
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
