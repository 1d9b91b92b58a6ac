/**
 * Backups that restore, with the compiled binary: each mode backed up while a client keeps
 * writing, restored into an empty data directory, and served again with every write that was
 * acknowledged before the backup started; the refusals (existing target, non-empty data directory,
 * damaged file, a database from a newer version); and on PostgreSQL the documented `pg_dump` /
 * `pg_restore` pair, restored into a fresh database that a new instance serves.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  assert,
  compiledBinary,
  runCommand,
  startChild,
  suite,
  tempDir,
  withPostgresDatabase,
  type ChildServer,
} from '../harness.ts'
import { openSqlite } from '../../src/storage/open-sqlite.ts'

const test = suite('ops/backup', { timeoutMs: 180_000 })
const dir = tempDir('svc-backup-')
let binary = ''
const HOST_TOKEN = 'backup-test-host-token-0123456789'
const CLIENT_TOKEN = 'backup-test-client-token-0123456789'

test.before(async () => {
  binary = await compiledBinary()
})
test.after(() => dir.remove())

const mode = (path: string) => statSync(path).mode & 0o777

async function json(url: string, init: RequestInit & { json?: unknown } = {}) {
  const response = await fetch(url, {
    ...init,
    headers: { ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.json !== undefined ? JSON.stringify(init.json) : init.body,
  })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : null }
}

/**
 * Runs `write` in `concurrency` loops until stopped; returns the acknowledged results with the
 * time each acknowledgement arrived.
 */
function writeLoad(write: (i: number) => Promise<string>, concurrency = 4) {
  const acked: Array<{ id: string; at: number }> = []
  let stopping = false
  let n = 0
  const loops = Array.from({ length: concurrency }, async () => {
    while (!stopping) acked.push({ id: await write(n++), at: performance.now() })
  })
  return {
    acked,
    stop: async () => {
      stopping = true
      await Promise.all(loops)
    },
  }
}

async function waitUntil(check: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('control plane: a backup taken under write load restores with every acknowledged write, and serves', async () => {
  const data = join(dir.path, 'cp-data')
  const server = await startChild(binary, ['--mode', 'control-plane', '--port', '0', '--data-dir', data], {
    cwd: dir.path,
    env: { HOME: dir.path, SERVICE_CONTROL_PLANE_CONFIG: undefined },
  })
  let restored: ChildServer | undefined
  try {
    const signUp = await json(`${server.url}/v1/auth/sign-up`, {
      method: 'POST',
      json: { email: 'owner@backup.test', password: 'correct horse battery', name: 'Owner' },
    })
    assert.is(signUp.status, 201)
    const token = signUp.body.session.token as string
    const auth = { authorization: `Bearer ${token}` }
    assert.is(
      (await json(`${server.url}/v1/orgs`, { method: 'POST', headers: auth, json: { name: 'Kept' } })).status,
      201,
    )
    const load = writeLoad(async (i) => {
      const res = await json(`${server.url}/v1/config-objects`, {
        method: 'POST',
        headers: auth,
        json: { type: 'context', sourceMode: 'cloud', title: `Doc ${i}`, input: { rawSourceText: `text ${i}` } },
      })
      if (res.status !== 201) throw new Error(`create answered ${res.status}`)
      return res.body.item.id as string
    })
    await waitUntil(() => load.acked.length >= 20)
    const started = performance.now()
    const file = join(dir.path, 'cp.backup')
    const backup = await runCommand(binary, ['control-plane', 'backup', '--data-dir', data, '--to', file], {
      env: { HOME: dir.path },
    })
    const writtenDuring = load.acked.filter((a) => a.at > started).length
    await load.stop()
    assert.is(backup.code, 0, backup.stderr)
    assert.match(backup.stdout, /backed up .* \(\d+ migrations applied\)/)
    assert.is(mode(file), 0o600)
    const before = load.acked.filter((a) => a.at < started).map((a) => a.id)
    assert.ok(before.length >= 20)

    const again = await runCommand(binary, ['control-plane', 'backup', '--data-dir', data, '--to', file])
    assert.is(again.code, 2, 'an existing backup is never overwritten')
    const busy = await runCommand(binary, ['control-plane', 'restore', '--from', file, '--data-dir', data])
    assert.is(busy.code, 2, 'a non-empty data directory is refused')
    assert.match(busy.stderr, /not empty/)

    const target = join(dir.path, 'cp-restored')
    const restore = await runCommand(binary, ['control-plane', 'restore', '--from', file, '--data-dir', target])
    assert.is(restore.code, 0, restore.stderr)
    assert.equal(readdirSync(target), ['control-plane.sqlite'])
    assert.is(mode(target), 0o700)
    assert.is(mode(join(target, 'control-plane.sqlite')), 0o600)
    // The sealed secrets need the same key; the backup does not carry it (printed on both commands).
    copyFileSync(join(data, 'encryption.key'), join(target, 'encryption.key'))
    restored = await startChild(binary, ['--mode', 'control-plane', '--port', '0', '--data-dir', target], {
      cwd: dir.path,
      env: { HOME: dir.path, SERVICE_CONTROL_PLANE_CONFIG: undefined },
    })
    const missing: string[] = []
    for (const id of before) {
      const res = await fetch(`${restored.url}/v1/config-objects/${id}`, { headers: auth })
      await res.arrayBuffer()
      if (res.status !== 200) missing.push(`${id}: ${res.status}`)
    }
    assert.equal(missing, [], `every write acknowledged before the backup is there (${writtenDuring} more during it)`)
    const create = await json(`${restored.url}/v1/config-objects`, {
      method: 'POST',
      headers: auth,
      json: { type: 'context', sourceMode: 'cloud', title: 'After restore', input: { rawSourceText: 'new' } },
    })
    assert.is(create.status, 201, 'the restored server takes writes')
  } finally {
    await restored?.stop()
    await server.stop()
  }
})

test('workspace: tokens issued before the backup, and the snapshots, come back in a new data directory', async () => {
  const ws = join(dir.path, 'ws')
  mkdirSync(join(ws, '.opencode/skills/kept'), { recursive: true })
  writeFileSync(join(ws, '.opencode/skills/kept/SKILL.md'), '---\nname: kept\ndescription: Kept.\n---\nBody\n')
  const data = join(dir.path, 'ws-data')
  const config = join(dir.path, 'ws-config.json')
  writeFileSync(
    config,
    JSON.stringify({ workspaces: [{ path: ws }], token: CLIENT_TOKEN, hostToken: HOST_TOKEN, dataDir: data }),
  )
  const env = { HOME: dir.path, SERVICE_SERVER_CONFIG: undefined, SERVICE_DATA_DIR: undefined }
  const args = ['--mode', 'workspace', '--config', config, '--port', '0']
  const server = await startChild(binary, args, { cwd: dir.path, env })
  let restored: ChildServer | undefined
  try {
    const host = { 'x-service-host-token': HOST_TOKEN }
    const load = writeLoad(async (i) => {
      const res = await json(`${server.url}/tokens`, {
        method: 'POST',
        headers: host,
        json: { scope: 'viewer', label: `t${i}` },
      })
      if (res.status !== 201) throw new Error(`token answered ${res.status}`)
      return res.body.id as string
    })
    await waitUntil(() => load.acked.length >= 20)
    const started = performance.now()
    const file = join(dir.path, 'ws.backup.zip')
    // Found as the server finds it: through the config file's dataDir.
    const backup = await runCommand(binary, ['backup', '--mode', 'workspace', '--config', config, '--to', file], {
      env,
    })
    await load.stop()
    assert.is(backup.code, 0, backup.stderr)
    assert.match(backup.stdout, /and 1 workspace snapshots/)
    assert.is(mode(file), 0o600)
    const before = load.acked.filter((a) => a.at < started).map((a) => a.id)

    const target = join(dir.path, 'ws-restored')
    const restore = await runCommand(binary, ['restore', '--mode', 'workspace', '--from', file, '--data-dir', target], {
      env,
    })
    assert.is(restore.code, 0, restore.stderr)
    assert.equal(readdirSync(target).sort(), ['workspace-snapshots', 'workspace-state.sqlite'])
    assert.is(mode(join(target, 'workspace-state.sqlite')), 0o600)
    const snapshots = join(target, 'workspace-snapshots')
    assert.is(mode(snapshots), 0o700)
    for (const name of readdirSync(snapshots)) assert.is(mode(join(snapshots, name)), 0o600)

    restored = await startChild(binary, [...args, '--data-dir', target], { cwd: dir.path, env })
    const tokens = await json(`${restored.url}/tokens`, { headers: host })
    assert.is(tokens.status, 200)
    const ids = new Set((tokens.body.items as Array<{ id: string }>).map((t) => t.id))
    assert.equal(
      before.filter((id) => !ids.has(id)),
      [],
      'every token issued before the backup is there',
    )
  } finally {
    await restored?.stop()
    await server.stop()
  }
})

test('restore refuses a damaged file, a file of the other mode and a database from a newer version, writing nothing', async () => {
  const damaged = join(dir.path, 'damaged.backup')
  writeFileSync(damaged, `SQLite format 3\u0000${'x'.repeat(5000)}`)
  const target = join(dir.path, 'never')
  for (const [args, pattern] of [
    [['control-plane', 'restore', '--from', damaged, '--data-dir', target], /refused/],
    [['restore', '--mode', 'workspace', '--from', damaged, '--data-dir', target], /not a workspace backup/],
  ] as const) {
    const result = await runCommand(binary, [...args])
    assert.is(result.code, 2, result.stderr)
    assert.match(result.stderr, pattern)
  }
  assert.not.ok(existsSync(join(target, 'control-plane.sqlite')), 'nothing was written')

  // A control-plane database carrying a migration this version does not know.
  const data = join(dir.path, 'newer-data')
  const server = await startChild(binary, ['--mode', 'control-plane', '--port', '0', '--data-dir', data], {
    cwd: dir.path,
    env: { HOME: dir.path, SERVICE_CONTROL_PLANE_CONFIG: undefined },
  })
  await server.stop()
  const db = await openSqlite(join(data, 'control-plane.sqlite'))
  db.exec(`insert into kysely_migration (name, timestamp) values ('9999_from_the_future', '2030-01-01T00:00:00.000Z')`)
  db.close()
  const newer = join(dir.path, 'newer.backup')
  assert.is((await runCommand(binary, ['control-plane', 'backup', '--data-dir', data, '--to', newer])).code, 0)
  const refused = await runCommand(binary, ['control-plane', 'restore', '--from', newer, '--data-dir', target])
  assert.is(refused.code, 2)
  assert.match(refused.stderr, /newer version .*9999_from_the_future/)
  assert.not.ok(existsSync(join(target, 'control-plane.sqlite')))
})

const pgServer = process.env.SERVICE_TEST_DATABASE_URL
if (!pgServer || !existsSync('/usr/bin/pg_dump')) {
  console.log('ops/backup PostgreSQL test skipped: SERVICE_TEST_DATABASE_URL is not set or pg_dump is missing')
} else {
  test('PostgreSQL: pg_dump -Fc of a live database, pg_restore into a fresh one, and a new instance serves it', async () => {
    await withPostgresDatabase(async (source) => {
      await withPostgresDatabase(async (fresh) => {
        const env = { HOME: dir.path, SERVICE_CONTROL_PLANE_CONFIG: undefined, SERVICE_ENCRYPTION_KEY: 'a'.repeat(64) }
        const start = (url: string) =>
          startChild(binary, ['--mode', 'control-plane', '--port', '0', '--data-dir', join(dir.path, 'pg-local')], {
            cwd: dir.path,
            env: { ...env, SERVICE_DATABASE_URL: url },
          })
        const live = await start(source)
        let restored: ChildServer | undefined
        try {
          const signUp = await json(`${live.url}/v1/auth/sign-up`, {
            method: 'POST',
            json: { email: 'pg@backup.test', password: 'correct horse battery', name: 'Owner' },
          })
          const auth = { authorization: `Bearer ${signUp.body.session.token}` }
          await json(`${live.url}/v1/orgs`, { method: 'POST', headers: auth, json: { name: 'Dumped' } })
          const made = await json(`${live.url}/v1/config-objects`, {
            method: 'POST',
            headers: auth,
            json: { type: 'context', sourceMode: 'cloud', title: 'Dumped doc', input: { rawSourceText: 'x' } },
          })
          assert.is(made.status, 201)
          const dump = join(dir.path, 'service.dump')
          // The flags docs/deployment.md gives: custom format, no owner or privileges from the source.
          const dumped = await runCommand('pg_dump', [
            '--format=custom',
            '--no-owner',
            '--no-privileges',
            `--file=${dump}`,
            source,
          ])
          assert.is(dumped.code, 0, dumped.stderr)
          const loaded = await runCommand('pg_restore', [
            '--no-owner',
            '--no-privileges',
            '--exit-on-error',
            '--single-transaction',
            `--dbname=${fresh}`,
            dump,
          ])
          assert.is(loaded.code, 0, loaded.stderr)
          await live.stop()
          restored = await start(fresh)
          const read = await json(`${restored.url}/v1/config-objects/${made.body.item.id}`, { headers: auth })
          assert.is(read.status, 200)
          assert.is(read.body.item.title, 'Dumped doc')
        } finally {
          await restored?.stop()
          await live.stop()
        }
      }, 'svc_t_fresh')
    }, 'svc_t_dump')
  })
}

test.run()
