/**
 * File sessions (spec §3): short-lived channels for batched file work, bound to the token that
 * created them. Held in memory (a restart ends them; clients create a new one). A session of a
 * viewer, of a read-only server, or created with `write:false` cannot write.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { FilesSettings } from '../config/files-settings.ts'
import { workspaceError } from '../workspace-errors.ts'

/** A session as stored. */
export interface FileSession {
  id: string
  workspaceId: string
  /** sha256 of the creating credential; another credential gets 403. */
  tokenHash: string
  createdAt: number
  expiresAt: number
  canWrite: boolean
}

/** A session on the wire. */
export interface FileSessionView {
  id: string
  workspaceId: string
  createdAt: number
  expiresAt: number
  /** Remaining lifetime in milliseconds. */
  ttlMs: number
  canWrite: boolean
}

/** In-memory session table with limits from {@link FilesSettings}. */
export class FileSessionStore {
  readonly #sessions = new Map<string, FileSession>()
  readonly #settings: FilesSettings
  readonly #now: () => number
  /** Called when the last session of a workspace ends (stops its watcher). */
  onIdle?: (workspaceId: string) => void

  constructor(settings: FilesSettings, now: () => number) {
    this.#settings = settings
    this.#now = now
  }

  /** Lifetime in ms for a requested `ttlSeconds`, clamped to 30 s–24 h; default 15 min. */
  ttlMs(ttlSeconds: number | undefined): number {
    if (ttlSeconds === undefined || !Number.isFinite(ttlSeconds)) return this.#settings.defaultTtlMs
    return Math.min(this.#settings.maxTtlMs, Math.max(this.#settings.minTtlMs, Math.round(ttlSeconds * 1000)))
  }

  /** Creates a session; 429 when the live-session limit is reached (we never evict a client's session). */
  create(input: { workspaceId: string; tokenHash: string; canWrite: boolean; ttlSeconds?: number }): FileSession {
    this.sweep()
    if (this.#sessions.size >= this.#settings.maxSessions) {
      throw workspaceError(
        'too_many_file_sessions',
        `${this.#settings.maxSessions} file sessions are already open; close one or wait for expiry`,
        { headers: { 'retry-after': '30' } },
      )
    }
    const now = this.#now()
    const session: FileSession = {
      id: newId('fs', now),
      workspaceId: input.workspaceId,
      tokenHash: input.tokenHash,
      createdAt: now,
      expiresAt: now + this.ttlMs(input.ttlSeconds),
      canWrite: input.canWrite,
    }
    this.#sessions.set(session.id, session)
    return session
  }

  /** The live session `id` owned by `tokenHash`: 404 when unknown, expired or closed, 403 for another token. */
  get(id: string, tokenHash: string | undefined): FileSession {
    const session = this.#sessions.get(id)
    if (!session || session.expiresAt <= this.#now()) {
      if (session) this.#drop(session)
      throw workspaceError('file_session_not_found', 'File session not found or expired')
    }
    if (!tokenHash || session.tokenHash !== tokenHash)
      throw workspaceError('forbidden', 'File session does not belong to this token', {
        details: { required: 'session owner' },
      })
    return session
  }

  /** Extends a session to now + ttl. */
  renew(session: FileSession, ttlSeconds?: number): FileSession {
    session.expiresAt = this.#now() + this.ttlMs(ttlSeconds)
    return session
  }

  /** Closes a session. */
  close(session: FileSession): void {
    this.#drop(session)
  }

  /** True when some live session exists for the workspace. */
  hasSessions(workspaceId: string): boolean {
    for (const s of this.#sessions.values()) if (s.workspaceId === workspaceId && s.expiresAt > this.#now()) return true
    return false
  }

  /** The wire view. */
  view(session: FileSession): FileSessionView {
    const { id, workspaceId, createdAt, expiresAt, canWrite } = session
    return { id, workspaceId, createdAt, expiresAt, ttlMs: Math.max(0, expiresAt - this.#now()), canWrite }
  }

  /** Drops expired sessions. */
  sweep(): void {
    const now = this.#now()
    for (const s of [...this.#sessions.values()]) if (s.expiresAt <= now) this.#drop(s)
  }

  #drop(session: FileSession): void {
    if (!this.#sessions.delete(session.id)) return
    if (!this.hasSessions(session.workspaceId)) this.onIdle?.(session.workspaceId)
  }
}
