/**
 * Keeps a workspace's clients out of other workspaces' sidecar sessions.
 *
 * OpenCode stores sessions in one database and answers `GET /session/<id>` for any id whatever
 * directory the request is pinned to (verified against opencode 1.18.33), so pinning alone does not
 * isolate sessions. Before a request that addresses a session is forwarded, the session's own
 * directory is looked up and compared (by real path) with the workspace's; a foreign session answers
 * 404 as if it did not exist. A session's directory never changes, so answers are cached.
 * @module
 */
import { realpathSync } from 'node:fs'
import { resolve } from 'node:path'

/** Outcome of an ownership check. */
export type SessionOwnership = 'own' | 'foreign' | 'unknown'

const CACHE_LIMIT = 2000

/** The real path of a directory (or its absolute form when it does not exist). */
export function canonicalDirectory(path: string): string {
  const absolute = resolve(path)
  try {
    return realpathSync.native(absolute)
  } catch {
    return absolute
  }
}

/** Caches session id → owning directory for one sidecar. */
export class SessionGuard {
  readonly #directories = new Map<string, string>()

  /**
   * Whether `sessionId` belongs to `directory`. `lookup` fetches the session from the sidecar and
   * returns its `directory` field, or null when the sidecar does not know it (the request is then
   * forwarded and the sidecar answers its own 404).
   */
  async check(sessionId: string, directory: string, lookup: () => Promise<string | null>): Promise<SessionOwnership> {
    let owner = this.#directories.get(sessionId)
    if (owner === undefined) {
      const found = await lookup()
      if (found === null) return 'unknown'
      owner = canonicalDirectory(found)
      if (this.#directories.size >= CACHE_LIMIT) {
        const oldest = this.#directories.keys().next().value
        if (oldest !== undefined) this.#directories.delete(oldest)
      }
      this.#directories.set(sessionId, owner)
    }
    return owner === canonicalDirectory(directory) ? 'own' : 'foreign'
  }
}
