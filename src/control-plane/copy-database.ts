/**
 * `service-server control-plane copy-database --from <sqlite file> --to <postgres url>`: moves a
 * control plane from its embedded SQLite file to PostgreSQL without losing a row.
 *
 * The target is migrated with the same embedded migrations first, so both sides have the same
 * tables and columns; it must hold no data (only the `instance` row the first migration writes,
 * which the source's row replaces, so backups keep matching the deployment that wrote them). Every
 * row is copied inside one PostgreSQL transaction, parents before children (foreign-key order read
 * from the target's catalog), in batched multi-row inserts, from one read snapshot of the SQLite
 * file. Before committing, the row count of every table is compared on both sides; any difference
 * rolls everything back. The counts are printed only once they are verified and committed.
 * @module
 */
import { existsSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { type Kysely, sql, type Transaction } from 'kysely'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import type { Env } from '../core/settings.ts'
import { openDatabase, isPostgresUrl, type Database } from '../storage/database.ts'
import { redactDatabaseUrl, scrubDatabaseUrl } from '../storage/open-postgres.ts'

/** Process hooks for the command (tests pass their own). */
export interface CopyDatabaseIo {
  env: Env
  cwd: string
  stdout(line: string): void
  stderr(line: string): void
}

/** One table's verified row counts. */
export interface CopiedTable {
  table: string
  sqliteRows: number
  postgresRows: number
}

/** A refusal the operator can fix (wrong path, non-empty target, schema mismatch): exit 2. */
export class CopyRefusedError extends Error {
  readonly exitCode = 2
  constructor(message: string) {
    super(message)
    this.name = 'CopyRefusedError'
  }
}

/** Tables the migrator owns; each side keeps its own record of what it applied. */
const MIGRATOR_TABLES = new Set(['kysely_migration', 'kysely_migration_lock'])

/** Tables whose rows the migrations write themselves; the source's rows replace them. */
const SEEDED_BY_MIGRATIONS = new Set(['instance'])

/** PostgreSQL accepts at most 65,535 bound values per statement; stay well below it. */
const MAX_VALUES_PER_INSERT = 20_000
const MAX_ROWS_PER_INSERT = 500
/** Rows read from SQLite per page: bounds memory on large databases. */
const READ_PAGE_ROWS = 2_000

const USAGE = 'Usage: service-server control-plane copy-database --from <sqlite file> [--to <postgres url>]'

type AnyDb = Kysely<any>

async function sqliteTables(db: AnyDb): Promise<Map<string, string[]>> {
  const tables = await sql<{
    name: string
  }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db)
  const out = new Map<string, string[]>()
  for (const { name } of tables.rows) {
    if (MIGRATOR_TABLES.has(name)) continue
    const columns = await sql<{ name: string }>`select name from pragma_table_info(${name}) order by cid`.execute(db)
    out.set(
      name,
      columns.rows.map((c) => c.name),
    )
  }
  return out
}

async function postgresTables(db: AnyDb): Promise<Map<string, string[]>> {
  const columns = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(db)
  const out = new Map<string, string[]>()
  for (const row of columns.rows) {
    if (MIGRATOR_TABLES.has(row.table_name)) continue
    const list = out.get(row.table_name) ?? []
    list.push(row.column_name)
    out.set(row.table_name, list)
  }
  return out
}

/** Parents before children; ties (and anything a cycle would leave) in name order, so runs are repeatable. */
async function foreignKeyOrder(db: AnyDb, tables: string[]): Promise<string[]> {
  const edges = await sql<{ child: string; parent: string }>`
    select child.relname as child, parent.relname as parent from pg_constraint c
    join pg_class child on child.oid = c.conrelid
    join pg_class parent on parent.oid = c.confrelid
    join pg_namespace n on n.oid = c.connamespace
    where c.contype = 'f' and n.nspname = current_schema()`.execute(db)
  const parents = new Map<string, Set<string>>(tables.map((t) => [t, new Set<string>()]))
  for (const { child, parent } of edges.rows) {
    if (child !== parent && parents.has(child) && parents.has(parent)) parents.get(child)!.add(parent)
  }
  const order: string[] = []
  const placed = new Set<string>()
  while (order.length < tables.length) {
    const ready = tables.filter((t) => !placed.has(t) && [...parents.get(t)!].every((p) => placed.has(p))).sort()
    if (ready.length === 0) {
      const stuck = tables.filter((t) => !placed.has(t)).sort()
      throw new CopyRefusedError(`foreign keys form a cycle between ${stuck.join(', ')}; cannot order the copy`)
    }
    for (const t of ready) {
      placed.add(t)
      order.push(t)
    }
  }
  return order
}

function compareSchemas(source: Map<string, string[]>, target: Map<string, string[]>): void {
  const problems: string[] = []
  for (const [table, columns] of source) {
    const other = target.get(table)
    if (!other) {
      problems.push(`table ${table} is missing in PostgreSQL`)
      continue
    }
    const missing = columns.filter((c) => !other.includes(c))
    const extra = other.filter((c) => !columns.includes(c))
    if (missing.length) problems.push(`${table}: PostgreSQL lacks ${missing.join(', ')}`)
    if (extra.length) problems.push(`${table}: SQLite lacks ${extra.join(', ')}`)
  }
  for (const table of target.keys()) if (!source.has(table)) problems.push(`table ${table} is missing in SQLite`)
  if (problems.length)
    throw new CopyRefusedError(`the two schemas differ after migrating both: ${problems.slice(0, 10).join('; ')}`)
}

async function countRows(db: AnyDb, table: string): Promise<number> {
  const result = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(db)
  return Number(result.rows[0]?.n ?? 0)
}

async function refuseNonEmpty(trx: Transaction<any>, tables: string[]): Promise<void> {
  const occupied: string[] = []
  for (const table of tables) {
    if (SEEDED_BY_MIGRATIONS.has(table)) continue
    const any = await sql`select 1 from ${sql.table(table)} limit 1`.execute(trx)
    if (any.rows.length > 0) occupied.push(`${table} (${await countRows(trx, table)} rows)`)
  }
  if (occupied.length)
    throw new CopyRefusedError(
      `the PostgreSQL database is not empty: ${occupied.join(', ')}; copy into a newly created database`,
    )
}

async function copyTable(source: AnyDb, target: Transaction<any>, table: string, columns: string[]): Promise<void> {
  const perInsert = Math.max(1, Math.min(MAX_ROWS_PER_INSERT, Math.floor(MAX_VALUES_PER_INSERT / columns.length)))
  const list = sql.join(columns.map((c) => sql.ref(c)))
  let after = Number.MIN_SAFE_INTEGER
  for (;;) {
    // Keyset over rowid: every page is an index range, and nothing is held in memory but one page.
    const page = await sql<Record<string, unknown>>`
      select rowid as __copy_rowid, ${list} from ${sql.table(table)}
      where rowid > ${after} order by rowid limit ${READ_PAGE_ROWS}`.execute(source)
    if (page.rows.length === 0) return
    after = Number(page.rows[page.rows.length - 1]!.__copy_rowid)
    const rows = page.rows.map((row) => {
      const out: Record<string, unknown> = {}
      for (const c of columns) out[c] = row[c]
      return out
    })
    for (let i = 0; i < rows.length; i += perInsert) {
      await target
        .insertInto(table)
        .values(rows.slice(i, i + perInsert))
        .execute()
    }
    if (page.rows.length < READ_PAGE_ROWS) return
  }
}

/**
 * Copies every row of the SQLite control-plane database at `from` into the PostgreSQL database at
 * `to` in one transaction and returns the verified per-table counts. The SQLite file is brought to
 * this version's schema first, exactly as starting the server on it would.
 */
export async function copyDatabase(options: {
  from: string
  to: string
  /** Progress lines for a person watching (never the password). */
  log?: (line: string) => void
}): Promise<CopiedTable[]> {
  if (!isPostgresUrl(options.to)) throw new CopyRefusedError('--to must be a postgres:// or postgresql:// URL')
  if (!existsSync(options.from) || !statSync(options.from).isFile())
    throw new CopyRefusedError(`no SQLite database at ${options.from}`)
  let sqlite: Database<any> | undefined
  let postgres: Database<any> | undefined
  try {
    sqlite = await openDatabase({ path: options.from, migrations: controlPlaneMigrations })
    postgres = await openDatabase({
      path: options.from,
      url: options.to,
      migrations: controlPlaneMigrations,
      postgres: { poolSize: 2 },
    })
    const sourceDb = sqlite.db
    const targetDb = postgres.db
    const sourceTables = await sqliteTables(sourceDb)
    const targetTables = await postgresTables(targetDb)
    compareSchemas(sourceTables, targetTables)
    const order = await foreignKeyOrder(targetDb, [...targetTables.keys()])
    options.log?.(`copying ${order.length} tables from ${options.from} into ${redactDatabaseUrl(options.to)}`)
    // One read transaction on SQLite: the copy is one consistent snapshot even if a server still writes.
    const copied = await sourceDb.transaction().execute((source) =>
      targetDb.transaction().execute(async (target) => {
        await refuseNonEmpty(target, order)
        for (const table of SEEDED_BY_MIGRATIONS) if (targetTables.has(table)) await target.deleteFrom(table).execute()
        const counts: CopiedTable[] = []
        for (const table of order) {
          await copyTable(source, target, table, sourceTables.get(table)!)
          counts.push({
            table,
            sqliteRows: await countRows(source, table),
            postgresRows: await countRows(target, table),
          })
        }
        // The feed's numbers come from a PostgreSQL sequence: start it past the copied ones.
        if (targetTables.has('change_event')) {
          await sql`select setval('change_event_seq', coalesce((select max(seq) from change_event), 0) + 1, false)`.execute(
            target,
          )
        }
        const differ = counts.filter((c) => c.sqliteRows !== c.postgresRows)
        if (differ.length)
          throw new Error(
            `row counts differ after copying (${differ.map((c) => `${c.table}: ${c.sqliteRows} vs ${c.postgresRows}`).join(', ')}); nothing was committed`,
          )
        return counts
      }),
    )
    // Statistics now, not whenever autovacuum comes by (if it runs at all): without them the planner
    // can nest a member's visibility set inside a range it takes for one row (docs/deployment.md).
    await sql`analyze`.execute(targetDb)
    return copied
  } finally {
    await postgres?.close().catch(() => {})
    await sqlite?.close().catch(() => {})
  }
}

/** The verified counts as an aligned table for the terminal. */
export function formatCounts(counts: CopiedTable[]): string[] {
  const width = Math.max(5, ...counts.map((c) => c.table.length))
  const total = counts.reduce((sum, c) => sum + c.sqliteRows, 0)
  return [
    `${'table'.padEnd(width)}  ${'sqlite'.padStart(9)}  ${'postgres'.padStart(9)}`,
    ...counts.map(
      (c) => `${c.table.padEnd(width)}  ${String(c.sqliteRows).padStart(9)}  ${String(c.postgresRows).padStart(9)}`,
    ),
    `${counts.length} tables, ${total} rows copied; every table's count verified on both sides`,
  ]
}

/**
 * Runs `control-plane <command>`; returns the exit code: 0 copied, 2 usage or a refusal (nothing
 * written), 1 the copy failed and was rolled back.
 */
export async function runControlPlaneCli(argv: string[], io: CopyDatabaseIo): Promise<number> {
  let values: { from?: string; to?: string; help?: boolean }
  try {
    const parsed = parseArgs({
      args: argv.slice(1),
      options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    })
    values = parsed.values
    if (parsed.positionals[0] !== 'copy-database' || parsed.positionals.length > 1) {
      if (values.help) {
        io.stdout(helpLines())
        return 0
      }
      io.stderr(`service-server: unknown control-plane command; ${USAGE}`)
      return 2
    }
  } catch (error) {
    // parseArgs quotes the offending argument; it may be a URL with a password, so only name the rule.
    const unknown = /Unknown option '([^']+)'/.exec((error as Error).message)?.[1]
    io.stderr(`service-server: ${unknown ? `unknown option ${unknown.split('=')[0]}` : 'invalid arguments'}; ${USAGE}`)
    return 2
  }
  if (values.help) {
    io.stdout(helpLines())
    return 0
  }
  const to = values.to ?? io.env.SERVICE_DATABASE_URL
  if (!values.from || !to) {
    io.stderr(`service-server: copy-database needs --from and --to (or SERVICE_DATABASE_URL); ${USAGE}`)
    return 2
  }
  const from = resolve(io.cwd, values.from)
  try {
    const counts = await copyDatabase({ from, to, log: io.stderr })
    for (const line of formatCounts(counts)) io.stdout(line)
    return 0
  } catch (error) {
    const message = scrubDatabaseUrl((error as Error).message ?? String(error), to)
    if ((error as { exitCode?: unknown }).exitCode === 2) {
      io.stderr(`service-server: ${message}`)
      return 2
    }
    io.stderr(`service-server: copy failed, nothing was written to PostgreSQL: ${message}`)
    return 1
  }
}

function helpLines(): string {
  return [
    USAGE,
    '',
    'Copies a control-plane SQLite database into an empty PostgreSQL database in one transaction,',
    "then prints each table's row count, verified on both sides. Stop the server first. --to may be",
    'left out to use SERVICE_DATABASE_URL (flags show in process lists).',
  ].join('\n')
}
