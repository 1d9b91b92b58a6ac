/**
 * copy-database: a control plane seeded through its API on SQLite (organization, members, keys,
 * config objects with versions, grants, teams, plugins, skill hubs, an LLM provider, a connector
 * that synced through the job queue) is copied into a fresh PostgreSQL database; every table's
 * rows are compared on both sides, and a control plane started on the copy serves the same data
 * (encrypted secrets included, with the same key). Refusals leave the target untouched and never
 * print the URL's password.
 *
 * The source is always SQLite, so these tests are registered only in the SQLite pass of the
 * runner: the PostgreSQL pass would run the very same thing again.
 */
import { join } from 'node:path'
import type { Kysely } from 'kysely'
import pg from 'pg'
import { controlPlaneMigrations } from '../../migrations/control-plane/index.ts'
import { openDatabase } from '../storage/database.ts'
import { createFixtureRepo, skillText } from '../../fixtures/git-repos/git-repo.ts'
import { silentLogger } from '../core/logger.ts'
import { assert, suite, tempDir } from '../../tests/harness.ts'
import { createControlPlaneApp, type ControlPlaneApp } from './app.ts'
import { loadControlPlaneConfig, type ControlPlaneConfig } from './config.ts'
import { runControlPlaneCli } from './copy-database.ts'
import { FAST_ASYNC, waitFor } from './testing/async-test-kit.ts'
import type { CallOptions, ContractClient } from './testing/contract-client.ts'
import { buildFixtureOrg } from './testing/org-fixture.ts'
import { TEST_ENGINE } from './testing/test-database.ts'

const test = suite('control-plane/copy-database', { timeoutMs: 120_000 })

const SERVER = process.env.SERVICE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const PASSWORD = 'copy-S3cret-pw'

/** A URL for `name` on the test server, carrying a password (trust auth ignores it) to check it never leaks. */
function urlFor(name: string, withPassword = true): string {
  const url = new URL(SERVER)
  url.pathname = `/${name}`
  if (withPassword) url.password = PASSWORD
  return url.toString()
}

async function admin<T>(work: (c: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const client = new pg.Client({ connectionString: database ? urlFor(database, false) : SERVER })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

async function withEmptyDatabase<T>(work: (name: string) => Promise<T>): Promise<T> {
  const name = `svc_copy_${process.pid}_${Date.now().toString(36)}`
  await admin((c) => c.query(`create database ${name}`))
  try {
    return await work(name)
  } finally {
    await admin((c) => c.query(`drop database if exists ${name} with (force)`))
  }
}

function planeConfig(dir: string, databaseUrl: string | null): ControlPlaneConfig {
  const base = loadControlPlaneConfig({}, {}, dir)
  return {
    ...base,
    dataDir: join(dir, 'data'),
    databasePath: join(dir, 'control-plane.sqlite'),
    databaseUrl,
    encryptionKeyFile: join(dir, 'encryption.key'),
    logRequests: false,
    openSignUp: true,
    file: { ...base.file, ...FAST_ASYNC },
  }
}

/**
 * A client with the contract client's shape that does not check responses against the contract:
 * seeding is not what this suite tests (the contract suites are), and it should not fail on another
 * route's schema.
 */
function plainClient(app: ControlPlaneApp): ContractClient {
  const call = async (method: string, path: string, options: CallOptions = {}) => {
    const headers = new Headers(options.headers)
    if (options.json !== undefined) headers.set('content-type', 'application/json')
    if (options.token !== undefined) headers.set('authorization', `Bearer ${options.token}`)
    if (options.apiKey !== undefined) headers.set('x-api-key', options.apiKey)
    if (options.orgId !== undefined) headers.set('x-service-org-id', options.orgId)
    const body: BodyInit | undefined =
      options.json !== undefined ? JSON.stringify(options.json) : (options.body as BodyInit | undefined)
    const response = await app.fetch(new Request(new URL(path, 'http://copy.test'), { method, headers, body }))
    const text = await response.text()
    return {
      status: response.status,
      headers: response.headers,
      body: text ? JSON.parse(text) : null,
      operationId: null,
    }
  }
  return {
    call,
    get: (path: string, options?: CallOptions) => call('GET', path, options),
    post: (path: string, options?: CallOptions) => call('POST', path, options),
    patch: (path: string, options?: CallOptions) => call('PATCH', path, options),
    put: (path: string, options?: CallOptions) => call('PUT', path, options),
    delete: (path: string, options?: CallOptions) => call('DELETE', path, options),
  } as unknown as ContractClient
}

async function plane(
  dir: string,
  databaseUrl: string | null,
): Promise<{ app: ControlPlaneApp; client: ContractClient }> {
  const app = await createControlPlaneApp(planeConfig(dir, databaseUrl), {
    logger: silentLogger,
    scrypt: { N: 2 ** 10, r: 8, p: 1 },
  })
  return { app, client: plainClient(app) }
}

function ok(res: { status: number; body: any }, status: number, what: string): any {
  assert.is(res.status, status, `${what}: ${JSON.stringify(res.body)}`)
  return res.body
}

/** Seeds an organization through the API the way people would use it; returns what to look up later. */
async function seed(client: ContractClient, repoDir: string) {
  const org = await buildFixtureOrg(client, 'copy')
  const token = org.owner.token
  const skill = ok(
    await client.post('/v1/config-objects', {
      token,
      json: {
        type: 'skill',
        sourceMode: 'cloud',
        title: 'Copied skill',
        input: { rawSourceText: skillText('copied') },
      },
    }),
    201,
    'skill',
  ).item
  const mcp = ok(
    await client.post('/v1/config-objects', {
      token,
      json: {
        type: 'mcp',
        sourceMode: 'cloud',
        title: 'Files',
        input: { normalizedPayload: { type: 'remote', url: 'https://mcp.example/sse' } },
      },
    }),
    201,
    'mcp',
  ).item
  for (const body of ['Second body.', 'Third body.'])
    ok(
      await client.post(`/v1/config-objects/${skill.id}/versions`, {
        token,
        json: { input: { rawSourceText: skillText('copied', 'Does copied things', body) } },
      }),
      201,
      'version',
    )
  const team = ok(
    await client.post('/v1/teams', { token, json: { name: 'readers', memberIds: [org.member.memberId] } }),
    201,
    'team',
  ).item.id
  ok(
    await client.post(`/v1/config-objects/${mcp.id}/access`, { token, json: { teamId: team, role: 'viewer' } }),
    201,
    'grant',
  )
  ok(
    await client.post(`/v1/config-objects/${mcp.id}/access`, { token, json: { orgWide: true, role: 'viewer' } }),
    201,
    'grant',
  )
  const plugin = ok(await client.post('/v1/plugins', { token, json: { name: 'Kit' } }), 201, 'plugin').item.id
  ok(
    await client.post(`/v1/plugins/${plugin}/config-objects`, { token, json: { configObjectId: mcp.id } }),
    201,
    'plugin member',
  )
  const market = ok(await client.post('/v1/marketplaces', { token, json: { name: 'Company' } }), 201, 'market').item.id
  ok(await client.post(`/v1/marketplaces/${market}/plugins`, { token, json: { pluginId: plugin } }), 201, 'listing')
  const hub = ok(await client.post('/v1/skill-hubs', { token, json: { name: 'Writing' } }), 201, 'hub').item.id
  ok(await client.post(`/v1/skill-hubs/${hub}/skills`, { token, json: { skillId: skill.id } }), 201, 'hub skill')
  ok(
    await client.post(`/v1/skill-hubs/${hub}/assignments`, { token, json: { memberId: org.member.memberId } }),
    201,
    'assignment',
  )
  ok(
    await client.post('/v1/llm-providers', {
      token,
      json: { name: 'Team OpenAI', catalogProviderId: 'openai', models: ['gpt-4.1'], apiKey: 'sk-copy-test-key' },
    }),
    201,
    'llm provider',
  )
  // A connector that synced through the job queue: jobs, sync events, source items, synced objects.
  const repo = createFixtureRepo(repoDir, {
    'skills/alpha/SKILL.md': skillText('alpha'),
    'skills/beta/SKILL.md': skillText('beta'),
  })
  const account = ok(
    await client.post('/v1/connector-accounts', {
      token: org.admin.token,
      json: { connectorType: 'git', remoteId: 'local-copy', displayName: 'Local git' },
    }),
    201,
    'account',
  ).item.id
  const instance = ok(
    await client.post('/v1/connector-instances', {
      token: org.admin.token,
      json: { connectorAccountId: account, connectorType: 'git', name: 'Skills', config: {} },
    }),
    201,
    'instance',
  ).item.id
  const target = ok(
    await client.post(`/v1/connector-instances/${instance}/targets`, {
      token: org.admin.token,
      json: { connectorType: 'git', remoteId: repo.url, targetKind: 'repository_branch', config: { branch: 'main' } },
    }),
    201,
    'target',
  ).item.id
  ok(
    await client.post(`/v1/connector-targets/${target}/mappings`, {
      token: org.admin.token,
      json: { mappingKind: 'path', selector: 'skills/*/SKILL.md', objectType: 'skill' },
    }),
    201,
    'mapping',
  )
  const sync = ok(await client.post(`/v1/connector-targets/${target}/sync`, { token: org.admin.token }), 202, 'sync')
    .item.id
  const synced = await waitFor(
    () => client.get(`/v1/connector-sync-events/${sync}`, { token: org.admin.token }),
    (r) => !['queued', 'running'].includes(r.body.item.status),
    30_000,
  )
  assert.is(synced.body.item.status, 'completed', JSON.stringify(synced.body))
  return { org, skillId: skill.id as string, mcpId: mcp.id as string, hub: hub as string }
}

async function sqliteRows(db: Kysely<any>, table: string): Promise<string[]> {
  const rows = await db
    .selectFrom(table as never)
    .selectAll()
    .execute()
  return rows.map((r) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))).sort()
}

async function postgresRows(client: pg.Client, table: string): Promise<string[]> {
  // bigint columns come back as text from a plain client; the product reads them as numbers, as SQLite does.
  const rows = await client.query({
    text: `select * from "${table}"`,
    types: {
      getTypeParser: (oid: number, format?: any) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format)),
    },
  })
  return rows.rows.map((r) => JSON.stringify(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)))).sort()
}

if (TEST_ENGINE === 'sqlite') {
  test('a seeded SQLite control plane copies into PostgreSQL with every table identical, and a server on the copy serves it', async () => {
    const dir = tempDir('svc-copy-')
    try {
      const source = await plane(dir.path, null)
      let seeded: Awaited<ReturnType<typeof seed>>
      try {
        seeded = await seed(source.client, join(dir.path, 'repo'))
      } finally {
        await source.app.close()
      }
      await withEmptyDatabase(async (name) => {
        const stdout: string[] = []
        const stderr: string[] = []
        const code = await runControlPlaneCli(
          ['control-plane', 'copy-database', '--from', join(dir.path, 'control-plane.sqlite')],
          {
            env: { SERVICE_DATABASE_URL: urlFor(name) },
            cwd: dir.path,
            stdout: (l) => stdout.push(l),
            stderr: (l) => stderr.push(l),
          },
        )
        assert.is(code, 0, stderr.join('\n'))
        const output = [...stdout, ...stderr].join('\n')
        assert.not.ok(output.includes(PASSWORD), 'the password is never printed')
        const printed = new Map(
          stdout
            .slice(1, -1)
            .map((line) => line.trim().split(/\s+/))
            .map(([table, a, b]) => [table!, [Number(a), Number(b)]] as const),
        )
        assert.match(stdout.at(-1)!, /tables, \d+ rows copied/)

        // Every table: the printed counts, then every row, compared on both sides.
        // The file alone, not a control plane: starting one would register another instance row.
        const reopened = await openDatabase({
          path: join(dir.path, 'control-plane.sqlite'),
          migrations: controlPlaneMigrations,
        })
        try {
          const pgClient = new pg.Client({ connectionString: urlFor(name, false) })
          await pgClient.connect()
          try {
            const tables = (
              await pgClient.query<{ table_name: string }>(
                "select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'kysely%' order by 1",
              )
            ).rows.map((r) => r.table_name)
            assert.equal([...printed.keys()].sort(), tables, 'every table is reported')
            const analyzed = await pgClient.query<{ n: number }>(
              "select count(*)::int as n from pg_stat_user_tables where relname = 'config_object' and last_analyze is not null",
            )
            assert.is(analyzed.rows[0]!.n, 1, 'the copy leaves the planner statistics of what it loaded')
            let nonEmpty = 0
            for (const table of tables) {
              const mine = await sqliteRows(reopened.db, table)
              const theirs = await postgresRows(pgClient, table)
              assert.equal(printed.get(table), [mine.length, theirs.length], `${table} counts`)
              assert.equal(theirs, mine, `${table} rows`)
              if (mine.length > 0) nonEmpty++
            }
            for (const table of [
              'organization',
              'member',
              'api_key',
              'config_object',
              'config_object_version',
              'access_grant',
              'skill_hub',
              'connector_instance',
              'job',
            ])
              assert.ok((printed.get(table)?.[0] ?? 0) > 0, `${table} was seeded`)
            assert.ok(nonEmpty >= 20, `a realistic database (${nonEmpty} non-empty tables)`)
            const migrations = await pgClient.query('select count(*)::int as n from kysely_migration')
            assert.ok(migrations.rows[0].n > 0, 'the target carries its own migration record')
          } finally {
            await pgClient.end()
          }
        } finally {
          await reopened.close()
        }

        // A control plane on the copy: sign in with the old password, read what was there.
        const copy = await plane(dir.path, urlFor(name))
        try {
          const session = ok(
            await copy.client.post('/v1/auth/sign-in', {
              json: { email: seeded.org.owner.email, password: seeded.org.owner.password },
            }),
            200,
            'sign-in on the copy',
          )
          const token = session.session.token
          const versions = ok(
            await copy.client.get(`/v1/config-objects/${seeded.skillId}/versions`, { token }),
            200,
            'versions',
          )
          assert.equal(versions.items.map((v: { number: number }) => v.number).sort(), [1, 2, 3])
          const mine = ok(
            await copy.client.get('/v1/me/skills', { token: seeded.org.member.token }),
            200,
            'member skills',
          )
          assert.is(mine.items.length, 1, 'the old session and the hub assignment still work')
          assert.is(
            (await copy.client.get('/v1/me', { apiKey: seeded.org.ownerKey.key })).status,
            200,
            'the API key works',
          )
          const providers = ok(await copy.client.get('/v1/llm-providers', { token }), 200, 'providers')
          assert.is(providers.items.length, 1)
        } finally {
          await copy.app.close()
        }
      })
    } finally {
      dir.remove()
    }
  })

  test('a target that holds data is refused with the table named, nothing written, and no password printed', async () => {
    const dir = tempDir('svc-copy-')
    try {
      const source = await plane(dir.path, null)
      try {
        await buildFixtureOrg(source.client, 'refuse')
      } finally {
        await source.app.close()
      }
      await withEmptyDatabase(async (name) => {
        // A server already used the target: one organization there.
        const used = await plane(join(dir.path, 'other'), urlFor(name))
        try {
          await buildFixtureOrg(used.client, 'there')
        } finally {
          await used.app.close()
        }
        const before = await admin((c) => c.query('select count(*)::int as n from app_user'), name)
        const lines: string[] = []
        const io = {
          env: {},
          cwd: dir.path,
          stdout: (l: string) => lines.push(l),
          stderr: (l: string) => lines.push(l),
        }
        const code = await runControlPlaneCli(
          ['control-plane', 'copy-database', '--from', 'control-plane.sqlite', '--to', urlFor(name)],
          io,
        )
        assert.is(code, 2, lines.join('\n'))
        assert.match(lines.join('\n'), /not empty: .*app_user \(3 rows\)/)
        assert.not.ok(lines.join('\n').includes(PASSWORD))
        const after = await admin((c) => c.query('select count(*)::int as n from app_user'), name)
        assert.equal(after.rows, before.rows, 'nothing was written')
      })
    } finally {
      dir.remove()
    }
  })

  test('a missing source, an unreachable target and bad arguments exit 2 with a reason and no password', async () => {
    const lines: string[] = []
    const io = { env: {}, cwd: '/', stdout: (l: string) => lines.push(l), stderr: (l: string) => lines.push(l) }
    const dir = tempDir('svc-copy-')
    try {
      assert.is(
        await runControlPlaneCli(
          ['control-plane', 'copy-database', '--from', join(dir.path, 'nope.sqlite'), '--to', urlFor('x')],
          io,
        ),
        2,
      )
      assert.match(lines.join('\n'), /no SQLite database at .*nope\.sqlite/)
      // The source exists; the target port has nothing listening.
      const source = await plane(dir.path, null)
      await source.app.close()
      lines.length = 0
      const dead = `postgres://postgres:${PASSWORD}@127.0.0.1:1/none`
      assert.is(
        await runControlPlaneCli(
          ['control-plane', 'copy-database', '--from', join(dir.path, 'control-plane.sqlite'), '--to', dead],
          io,
        ),
        2,
      )
      assert.match(lines.join('\n'), /127\.0\.0\.1:1\/none is not usable: ECONNREFUSED/)
      lines.length = 0
      assert.is(await runControlPlaneCli(['control-plane', 'copy-database', `--too=${dead}`], io), 2)
      assert.is(await runControlPlaneCli(['control-plane', 'copy-everything'], io), 2)
      assert.is(await runControlPlaneCli(['control-plane', 'copy-database', '--from', 'x.sqlite'], io), 2)
      assert.not.ok(lines.join('\n').includes(PASSWORD), lines.join('\n'))
      assert.match(lines.join('\n'), /needs --from and --to/)
    } finally {
      dir.remove()
    }
  })
}

test.run()
