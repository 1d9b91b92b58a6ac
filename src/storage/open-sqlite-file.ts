/**
 * A SQLite database opened the way every database of ours is, the control plane's and the
 * workspace's alike: its directory created owner-only, WAL, `synchronous = normal`, foreign keys
 * on, a 5 s busy timeout, and the files readable by their owner only.
 * @module
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { openSqlite, type RawSqlite } from './open-sqlite.ts'

/** Opens (creating if needed) `path`, or an in-memory database for `:memory:`, with our settings. */
export async function openSqliteFile(path: string): Promise<RawSqlite> {
  const inMemory = path === ':memory:'
  if (!inMemory) mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const raw = await openSqlite(path)
  try {
    // The busy timeout first: switching to WAL takes a lock another process may be holding.
    raw.exec('pragma busy_timeout = 5000')
    await switchToWal(raw)
    raw.exec('pragma synchronous = normal')
    raw.exec('pragma foreign_keys = on')
    if (!inMemory) restrictFileModes(path)
    return raw
  } catch (error) {
    raw.close()
    throw error
  }
}

/**
 * Switching to WAL needs the file to itself; when another process holds a lock SQLite may answer
 * SQLITE_BUSY at once instead of waiting (its busy handler is skipped where waiting could
 * deadlock), so processes starting together on a new database retry here, within the same 5 s.
 */
async function switchToWal(raw: RawSqlite): Promise<void> {
  const deadline = Date.now() + 5000
  for (let delay = 5; ; delay = Math.min(delay * 2, 100)) {
    try {
      raw.exec('pragma journal_mode = wal')
      return
    } catch (error) {
      const busy = /SQLITE_BUSY|database is locked/i.test(`${(error as { code?: string }).code ?? ''} ${error}`)
      if (!busy || Date.now() + delay > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }
}

/** Why: the databases hold token hashes and encrypted secrets; other local users should not read them at all. */
function restrictFileModes(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}
