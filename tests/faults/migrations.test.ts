/**
 * Ten control-plane processes (`bun bin/service-server.ts`) started at the same moment against
 * one empty PostgreSQL database: every one starts and serves, the migrations are recorded exactly
 * once (the advisory lock makes the others wait, then find them applied), the first migration's
 * one-row table has one row, and the resulting schema (tables, columns, types, nullability,
 * indexes, constraints) is exactly what one process migrating alone produces.
 */
import { randomBytes } from 'node:crypto'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { assert, BUN, startChild, suite, tempDir, type ChildServer } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const entry = join(root, 'bin', 'service-server.ts')
const test = suite('faults/migrations', { timeoutMs: 240_000 })

const SERVER = new URL(process.env.SERVICE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
const INSTANCES = 10

function urlFor(database: string): string {
  const url = new URL(SERVER.toString())
  url.pathname = `/${database}`
  return url.toString()
}

async function query<T extends pg.QueryResultRow>(database: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: urlFor(database) })
  await client.connect()
  try {
    return (await client.query<T>(text)).rows
  } finally {
    await client.end()
  }
}

/** Everything about a schema that migrations decide, as sorted lines, so two databases compare exactly. */
async function schemaOf(database: string): Promise<string[]> {
  const columns = await query<{ line: string }>(
    database,
    `select table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as line
     from information_schema.columns where table_schema = current_schema()`,
  )
  const indexes = await query<{ line: string }>(
    database,
    `select 'index ' || indexdef as line from pg_indexes where schemaname = current_schema()`,
  )
  const constraints = await query<{ line: string }>(
    database,
    `select 'constraint ' || rel.relname || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid) as line
     from pg_constraint c join pg_class rel on rel.oid = c.conrelid join pg_namespace n on n.oid = c.connamespace
     where n.nspname = current_schema()`,
  )
  return [...columns, ...indexes, ...constraints].map((r) => r.line).sort()
}

async function withDatabases<T>(work: (many: string, alone: string) => Promise<T>): Promise<T> {
  const stamp = `${process.pid}_${Date.now().toString(36)}`
  const names = [`svc_mig_many_${stamp}`, `svc_mig_alone_${stamp}`] as const
  for (const name of names) await query('postgres', `create database ${name}`)
  try {
    return await work(...names)
  } finally {
    for (const name of names) await query('postgres', `drop database if exists ${name} with (force)`)
  }
}

test('ten instances started together on an empty database all serve, and migrate exactly once to the same schema as one alone', async () => {
  await withDatabases(async (many, alone) => {
    const dir = tempDir('svc-mig-')
    const key = randomBytes(32).toString('hex')
    let planes: PromiseSettledResult<ChildServer>[] = []
    try {
      const started = performance.now()
      planes = await Promise.allSettled(
        Array.from({ length: INSTANCES }, (_, i) =>
          startChild(
            BUN,
            [entry, '--mode', 'control-plane', '--port', '0', '--data-dir', join(dir.path, `instance-${i}`)],
            {
              env: { SERVICE_DATABASE_URL: urlFor(many), SERVICE_ENCRYPTION_KEY: key, SERVICE_DATABASE_POOL_SIZE: '2' },
              timeoutMs: 120_000,
            },
          ),
        ),
      )
      const failures = planes.filter((p) => p.status === 'rejected').map((p) => String(p.reason))
      assert.equal(failures, [], 'every instance starts')
      const servers = planes.map((p) => (p as PromiseFulfilledResult<ChildServer>).value)
      console.log(
        `  faults/migrations: ${INSTANCES} instances listening after ${Math.round(performance.now() - started)} ms`,
      )
      for (const server of servers) {
        const health = await (await fetch(`${server.url}/health`)).json()
        assert.equal([health.ok, health.database], [true, 'ok'])
      }

      const recorded = await query<{ name: string; n: number }>(
        many,
        'select name, count(*)::int as n from kysely_migration group by name order by name',
      )
      assert.equal(
        recorded.map((r) => r.name),
        Object.keys(controlPlaneMigrations).sort(),
        'every migration is recorded',
      )
      assert.ok(
        recorded.every((r) => r.n === 1),
        'each exactly once',
      )
      assert.equal(
        await query(many, 'select count(*)::int as n from instance'),
        [{ n: 1 }],
        'the first migration ran once',
      )

      const reference = await openDatabase({ path: ':unused:', url: urlFor(alone), migrations: controlPlaneMigrations })
      await reference.close()
      const expected = await schemaOf(alone)
      assert.ok(expected.length > 100, 'the reference schema is the real one')
      assert.equal(await schemaOf(many), expected, 'the same schema as one instance migrating alone')

      // The instances share one database: an account made through one signs in through another.
      const [first, second] = [servers[0]!, servers[INSTANCES - 1]!]
      const signUp = await fetch(`${first.url}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'first@migrations.test', password: 'a long enough password', name: 'First' }),
      })
      assert.is(signUp.status, 201)
      const signIn = await fetch(`${second.url}/v1/auth/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'first@migrations.test', password: 'a long enough password' }),
      })
      assert.is(signIn.status, 200)
    } finally {
      await Promise.all(planes.map((p) => (p.status === 'fulfilled' ? p.value.stop() : undefined)))
      dir.remove()
    }
  })
})

test.run()
