/**
 * Which engine the control-plane suites run on, and a fresh PostgreSQL database per test plane.
 *
 * `npm test` runs every control-plane suite twice: on SQLite, then (when
 * `SERVICE_TEST_DATABASE_URL` names a server) again with `SERVICE_TEST_ENGINE=postgres`. In that
 * pass each test plane gets its own database, cloned from a template migrated once per process,
 * named after the run so the runner drops whatever a crashed test left behind.
 * @module
 */
import { createHash } from 'node:crypto'
import pg from 'pg'
import { controlPlaneMigrations } from '../../../migrations/control-plane/index.ts'
import { openDatabase } from '../../storage/database.ts'

/** The engine of this test process. */
export const TEST_ENGINE: 'sqlite' | 'postgres' = process.env.SERVICE_TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite'

/** The admin URL of the test server (a database that always exists, e.g. `postgres`). */
export function testServerUrl(): string {
  const url = process.env.SERVICE_TEST_DATABASE_URL
  if (!url) throw new Error('SERVICE_TEST_DATABASE_URL is not set')
  return url
}

/** Prefix of every database this run creates; the runner drops them all at the end. */
export function runPrefix(): string {
  const id = (process.env.SERVICE_TEST_RUN_ID ?? String(process.pid)).toLowerCase().replace(/[^a-z0-9]/g, '')
  return `svct_${id}_`
}

function urlFor(database: string): string {
  const url = new URL(testServerUrl())
  url.pathname = `/${database}`
  return url.toString()
}

/** Runs `work` on a connection to the test server's admin database. */
export async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: testServerUrl() })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

let template: Promise<string> | undefined

function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const name = `${runPrefix()}template_${process.pid}`
    await admin(async (c) => {
      await c.query(`drop database if exists ${name}`)
      await c.query(`create database ${name}`)
    })
    const database = await openDatabase({ path: ':unused:', url: urlFor(name), migrations: controlPlaneMigrations })
    await database.close()
    return name
  })()
  return template
}

/**
 * The PostgreSQL URL for a test plane keyed by its directory: the same directory (a restart in a
 * test) reopens the same database; a new one starts from the migrated template.
 */
export async function testDatabaseUrl(key: string): Promise<string> {
  const name = `${runPrefix()}${createHash('sha256').update(key).digest('hex').slice(0, 16)}`
  const source = await migratedTemplate()
  await admin(async (c) => {
    const exists = await c.query('select 1 from pg_database where datname = $1', [name])
    if (exists.rowCount === 0) await c.query(`create database ${name} template ${source}`)
  })
  return urlFor(name)
}

/** Drops a test plane's database (after its app has closed). */
export async function dropTestDatabase(key: string): Promise<void> {
  const name = `${runPrefix()}${createHash('sha256').update(key).digest('hex').slice(0, 16)}`
  await admin((c) => c.query(`drop database if exists ${name} with (force)`))
}

/** A run id: the runner's start time (base 36) and its pid, so a later run can tell whether it is over. */
export function newRunId(now = Date.now(), pid = process.pid): string {
  return `${now.toString(36)}p${pid}`
}

/** How long a run's databases may stay when its runner cannot be checked (another host, a reused pid). */
const STALE_AFTER_MS = 24 * 3600_000

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as { code?: string }).code === 'EPERM'
  }
}

/**
 * Drops the databases of earlier runs that ended without cleaning up (killed before their end):
 * those whose runner process is gone, on a server on this host, or that are more than a day old.
 * The runner calls this before its PostgreSQL pass. Returns the names dropped.
 */
export async function dropStaleRunDatabases(now = Date.now()): Promise<string[]> {
  const host = new URL(testServerUrl()).hostname
  const local = host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]' || host === ''
  return admin(async (c) => {
    const rows = await c.query<{ datname: string }>("select datname from pg_database where datname like 'svct\\_%'")
    const dropped: string[] = []
    for (const { datname } of rows.rows) {
      const run = /^svct_([0-9a-z]+)p(\d+)_/.exec(datname)
      if (!run) continue
      const age = now - Number.parseInt(run[1]!, 36)
      if (age < STALE_AFTER_MS && (!local || alive(Number(run[2])))) continue
      await c.query(`drop database if exists ${datname} with (force)`)
      dropped.push(datname)
    }
    return dropped
  })
}

/** Drops every database of a run (the runner calls this after the PostgreSQL pass). */
export async function dropRunDatabases(prefix: string): Promise<number> {
  return admin(async (c) => {
    const rows = await c.query<{ datname: string }>('select datname from pg_database where datname like $1', [
      `${prefix.replace(/_/g, '\\_')}%`,
    ])
    for (const row of rows.rows) await c.query(`drop database if exists ${row.datname} with (force)`)
    return rows.rowCount ?? 0
  })
}
