/**
 * Online backups of our SQLite databases and their verification before a restore.
 *
 * A backup is `VACUUM INTO` from a connection of its own: SQLite runs it inside one read
 * transaction, so the copy is the database as of one commit, while the server keeps writing (WAL
 * lets readers and the writer proceed together). The copy is a compact, self-contained database
 * file (no `-wal` beside it), written under a temporary name with mode 0600 and linked into place
 * only when complete, so a failed or interrupted backup never leaves a file that looks finished,
 * and an existing file is never overwritten.
 * @module
 */
import { chmodSync, closeSync, existsSync, linkSync, openSync, rmSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { recordedMigrations } from './migration-record.ts'
import { openSqlite } from './open-sqlite.ts'
import { randomBytes } from '../core/random-bytes.ts'

/** A refusal the operator can act on (missing source, existing target, damaged or foreign file): exit 2. */
export class BackupRefusedError extends Error {
  readonly exitCode = 2
  constructor(message: string) {
    super(message)
    this.name = 'BackupRefusedError'
  }
}

/** A temporary name beside `target`, created empty with mode 0600 (VACUUM INTO accepts an empty file). */
function reserveTemp(target: string): string {
  const temp = join(dirname(target), `.${basename(target)}.partial-${randomBytes(6).toString('hex')}`)
  closeSync(openSync(temp, 'wx', 0o600))
  return temp
}

/** Moves `temp` to `target` unless something is there already (a hard link refuses to replace). */
function publish(temp: string, target: string): void {
  try {
    linkSync(temp, target)
  } catch (error) {
    if ((error as { code?: string }).code === 'EEXIST') throw new BackupRefusedError(`${target} already exists`)
    throw error
  } finally {
    rmSync(temp, { force: true })
  }
}

/** Copies the live database `source` to `target` (which must not exist), consistent as of one commit. */
export async function backupSqliteFile(source: string, target: string): Promise<void> {
  if (!existsSync(source) || !statSync(source).isFile()) throw new BackupRefusedError(`no database at ${source}`)
  if (existsSync(target)) throw new BackupRefusedError(`${target} already exists; choose a new file name`)
  if (!existsSync(dirname(target))) throw new BackupRefusedError(`directory ${dirname(target)} does not exist`)
  const temp = reserveTemp(target)
  try {
    const db = await openSqlite(source)
    try {
      // The server may hold the write lock for a moment (a checkpoint); wait rather than fail.
      db.exec('pragma busy_timeout = 10000')
      db.prepare('vacuum into ?').run([temp])
    } finally {
      db.close()
    }
    chmodSync(temp, 0o600)
    publish(temp, target)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
}

/** What a verified database file holds. */
export interface VerifiedDatabase {
  /** Applied migrations, in order. */
  migrations: string[]
}

/**
 * Checks that `path` is an intact SQLite database of the kind `known` migrates: `integrity_check`
 * answers ok, a migration record exists, and every migration it records is one this version
 * knows (a database migrated by a newer version is refused: this version cannot serve it).
 * Migrations this version has and the file lacks are fine: the server applies them at start.
 * `allowNewer` (for a backup, which copies whatever the server runs) skips the last check.
 */
export async function verifySqliteDatabase(
  path: string,
  known: ReadonlyArray<string>,
  what: string,
  options: { allowNewer?: boolean } = {},
): Promise<VerifiedDatabase> {
  if (!existsSync(path) || !statSync(path).isFile()) throw new BackupRefusedError(`no file at ${path}`)
  let db: Awaited<ReturnType<typeof openSqlite>>
  try {
    db = await openSqlite(path)
  } catch (error) {
    throw new BackupRefusedError(`${path} is not a SQLite database: ${(error as Error).message}`)
  }
  try {
    let problems: string[]
    try {
      const rows = db.prepare('pragma integrity_check').all([]) as Array<Record<string, unknown>>
      problems = rows.map((row) => String(Object.values(row)[0])).filter((text) => text !== 'ok')
    } catch (error) {
      throw new BackupRefusedError(`${path} is not a SQLite database: ${(error as Error).message}`)
    }
    if (problems.length > 0)
      throw new BackupRefusedError(`${path} failed the integrity check: ${problems.slice(0, 3).join('; ')}`)
    const migrations = recordedMigrations(db)
    if (!migrations || migrations.length === 0)
      throw new BackupRefusedError(`${path} is not a ${what} database (no migration record)`)
    const names = new Set(known)
    const unknown = migrations.filter((name) => !names.has(name))
    if (unknown.length > 0 && !options.allowNewer) {
      throw new BackupRefusedError(
        `${path} was migrated by a newer version (unknown migrations: ${unknown.join(', ')}); restore it with that version`,
      )
    }
    return { migrations }
  } finally {
    db.close()
  }
}

/** Writes `bytes` to `target` (which must not exist) with mode 0600, complete or not at all. */
export function installFile(target: string, write: (temp: string) => void): void {
  const temp = reserveTemp(target)
  try {
    write(temp)
    chmodSync(temp, 0o600)
    publish(temp, target)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
}
