/**
 * Where a SQLite database records the migrations applied to it: the tables kysely's migrator
 * keeps (`kysely_migration`, `kysely_migration_lock`), with its columns, whichever of our two
 * migrators wrote them (`database.ts` through kysely, `local-database.ts` without it), so each
 * reads the other's record.
 * @module
 */
import type { RawSqlite } from './open-sqlite.ts'

/** Creates the record's tables and lock row when missing, as kysely's migrator does on SQLite. */
export const MIGRATION_RECORD_TABLES = [
  'create table if not exists "kysely_migration" ("name" varchar(255) not null primary key, "timestamp" varchar(255) not null)',
  'create table if not exists "kysely_migration_lock" ("id" varchar(255) not null primary key, "is_locked" integer default 0 not null)',
  `insert into "kysely_migration_lock" ("id", "is_locked") values ('migration_lock', 0) on conflict do nothing`,
]

/** The names of the applied migrations in order, or null when nothing is recorded yet. */
export function recordedMigrations(raw: RawSqlite): string[] | null {
  try {
    const rows = raw.prepare('select "name" from "kysely_migration" order by "name"').all([]) as Array<{ name: string }>
    return rows.map((row) => row.name)
  } catch {
    return null
  }
}

/**
 * True when exactly `names` are recorded: the common case on every start after the first.
 * Anything else (no record yet, a name this version does not know) is for a migrator to decide.
 */
export function recordsExactly(recorded: string[] | null, names: ReadonlyArray<string>): boolean {
  const embedded = [...names].sort()
  return recorded !== null && recorded.length === embedded.length && recorded.every((name, i) => name === embedded[i])
}
