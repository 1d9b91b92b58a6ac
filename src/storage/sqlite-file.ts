/**
 * Opens a SQLite database file the way every database of ours is opened, whatever sits on top of
 * it (kysely in `database.ts`, plain statements in `plain-sqlite.ts`): parent directories with mode
 * 0700, WAL, foreign keys, a busy timeout, and the files readable by their owner only.
 * @module
 */
import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type { MigrationSet } from './database.ts'
import { openSqlite, type RawSqlite } from './open-sqlite.ts'

// The database holds hashes and encrypted secrets; other local users should not read it at all.
function restrictFileModes(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600)
  }
}

/** Opens (creating if needed) the SQLite file at `path`, or an in-memory database for `:memory:`. */
export async function openSqliteFile(path: string): Promise<RawSqlite> {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const raw = await openSqlite(path)
  raw.exec('pragma journal_mode = wal')
  raw.exec('pragma synchronous = normal')
  raw.exec('pragma foreign_keys = on')
  raw.exec('pragma busy_timeout = 5000')
  if (path !== ':memory:') restrictFileModes(path)
  return raw
}

/**
 * True when every embedded migration is recorded and nothing else is: the common case on every start
 * after the first. Anything unexpected (no table yet, a recorded name we do not know) means the
 * migrator should run and decide.
 */
export function schemaIsCurrent(raw: RawSqlite, migrations: MigrationSet): boolean {
  let recorded: string[]
  try {
    recorded = (raw.prepare('select name from kysely_migration order by name').all([]) as Array<{ name: string }>).map(
      (row) => row.name,
    )
  } catch {
    return false
  }
  const embedded = Object.keys(migrations).sort()
  return recorded.length === embedded.length && recorded.every((name, i) => name === embedded[i])
}
