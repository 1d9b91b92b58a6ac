/**
 * The audit log: one entry per completed write and per approval decision, persisted, newest
 * first. Entries name the actor by kind, scope, issued-token id and client id; they never carry
 * token values or hashes, because any client of the workspace may read the log.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { Principal } from '../access/auth.ts'
import type { AuditTable, StateDatabase } from '../base/state-db.ts'

/** Audit actions of approval decisions; they are not writes, so they do not move `updatedAt`. */
const DECISION_PREFIX = 'approval.'

/** The actor recorded with an entry. */
export interface AuditActor {
  type: Principal['type']
  scope: Principal['scope']
  tokenId?: string
  clientId?: string
}

/** One audit entry on the wire. */
export interface AuditEntry {
  id: string
  workspaceId: string
  actor: AuditActor
  action: string
  target: string
  summary: string
  timestamp: number
}

/** The public view of a principal: no credential material. */
export function actorOf(principal: Principal): AuditActor {
  const actor: AuditActor = { type: principal.type, scope: principal.scope }
  if (principal.tokenId) actor.tokenId = principal.tokenId
  if (principal.clientId) actor.clientId = principal.clientId
  return actor
}

/** Audit storage over the state database. */
export class AuditLog {
  readonly #db: StateDatabase
  readonly #now: () => number
  // GET config reports the last write time; remembering it keeps that read free of queries.
  readonly #latest = new Map<string, number | null>()

  constructor(db: StateDatabase, now: () => number = Date.now) {
    this.#db = db
    this.#now = now
  }

  /** Records an entry. */
  async record(input: {
    workspaceId: string
    actor: AuditActor
    action: string
    target: string
    summary: string
  }): Promise<AuditEntry> {
    const timestamp = this.#now()
    const entry: AuditEntry = { id: newId('aud', timestamp), timestamp, ...input }
    this.#db.run(
      'insert into audit (id, workspace_id, actor, action, target, summary, created_at) values (?, ?, ?, ?, ?, ?, ?)',
      [
        entry.id,
        entry.workspaceId,
        JSON.stringify(entry.actor),
        entry.action,
        entry.target,
        entry.summary,
        new Date(timestamp).toISOString(),
      ],
    )
    if (!entry.action.startsWith(DECISION_PREFIX)) this.#latest.set(entry.workspaceId, timestamp)
    return entry
  }

  /** The newest `limit` entries of a workspace, newest first. */
  async list(workspaceId: string, limit: number): Promise<AuditEntry[]> {
    const rows = this.#db.all<AuditTable>('select * from audit where workspace_id = ? order by seq desc limit ?', [
      workspaceId,
      limit,
    ])
    return rows.map((row) => ({
      id: row.id,
      workspaceId: row.workspace_id,
      actor: JSON.parse(row.actor) as AuditActor,
      action: row.action,
      target: row.target,
      summary: row.summary,
      timestamp: Date.parse(row.created_at),
    }))
  }

  /** Timestamp of the newest completed write of a workspace (approval decisions excluded), or null. */
  async latestTimestamp(workspaceId: string): Promise<number | null> {
    const known = this.#latest.get(workspaceId)
    if (known !== undefined) return known
    const row = this.#db.first<{ created_at: string }>(
      'select created_at from audit where workspace_id = ? and action not like ? order by seq desc limit 1',
      [workspaceId, `${DECISION_PREFIX}%`],
    )
    const latest = row ? Date.parse(row.created_at) : null
    this.#latest.set(workspaceId, latest)
    return latest
  }
}
