/**
 * The same source runs under Deno: start both modes with `deno run` and check /health.
 * Deno comes from `npm install` (the harness fails loudly without it), so this never skips.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import pg from 'pg'
import { assert, DENO, startChild, suite, tempDir } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const denoSuite = suite('smoke/deno', { timeoutMs: 120_000 })
const dir = tempDir('svc-deno-')
denoSuite.after(() => dir.remove())

const DENO_ARGS = ['run', '--allow-all', '--unstable-no-legacy-abort', join(root, 'bin/service-server.ts')]

denoSuite('the control plane runs under Deno with node:sqlite and answers /health', async () => {
  const child = await startChild(
    DENO,
    [...DENO_ARGS, '--mode', 'control-plane', '--data-dir', join(dir.path, 'cp'), '--port', '0'],
    { cwd: root, env: { HOME: dir.path }, timeoutMs: 90_000 },
  )
  try {
    const health = await (await fetch(`${child.url}/health`)).json()
    assert.equal([health.ok, health.mode], [true, 'control-plane'])
    assert.is((await fetch(`${child.url}/openapi.json`)).status, 200)
  } finally {
    assert.is(await child.stop(), 0)
  }
})

denoSuite('the control plane runs under Deno on PostgreSQL and keeps an account across a restart', async () => {
  const serverUrl = process.env.SERVICE_TEST_DATABASE_URL
  if (!serverUrl) {
    console.log('  PostgreSQL under Deno skipped: SERVICE_TEST_DATABASE_URL is not set (.ci/run sets it)')
    return
  }
  const name = `svc_deno_${process.pid}_${Date.now().toString(36)}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const start = () =>
    startChild(DENO, [...DENO_ARGS, '--mode', 'control-plane', '--data-dir', join(dir.path, 'cp-pg'), '--port', '0'], {
      cwd: root,
      env: { HOME: dir.path, SERVICE_DATABASE_URL: url.toString() },
      timeoutMs: 90_000,
    })
  try {
    const first = await start()
    try {
      const health = await (await fetch(`${first.url}/health`)).json()
      assert.equal([health.mode, health.database], ['control-plane', 'ok'])
      const signUp = await fetch(`${first.url}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'deno@pg.test', password: 'correct horse battery', name: 'D' }),
      })
      assert.is(signUp.status, 201)
    } finally {
      assert.is(await first.stop(), 0)
    }
    const second = await start()
    try {
      const signIn = await fetch(`${second.url}/v1/auth/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'deno@pg.test', password: 'correct horse battery' }),
      })
      assert.is(signIn.status, 200)
      const token = ((await signIn.json()) as { session: { token: string } }).session.token
      // A keyed write and its repeat: the key is recorded by the write's own transaction, through
      // AsyncLocalStorage, under Deno too.
      const createOrg = () =>
        fetch(`${second.url}/v1/orgs`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${token}`,
            'idempotency-key': 'deno-org-1',
          },
          body: JSON.stringify({ name: 'Deno org' }),
        })
      const created = await createOrg()
      const replayed = await createOrg()
      assert.equal([created.status, replayed.status, replayed.headers.get('idempotency-replayed')], [201, 201, 'true'])
      assert.equal((await replayed.json()).item.id, (await created.json()).item.id)
    } finally {
      assert.is(await second.stop(), 0)
    }
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`)
    await admin.end()
  }
})

denoSuite(
  'the workspace server runs under Deno: tokens issued and revoked, disk changes stored as events',
  async () => {
    mkdirSync(join(dir.path, 'ws'))
    writeFileSync(
      join(dir.path, 'server.json'),
      JSON.stringify({
        token: 'deno-smoke-client-token',
        hostToken: 'deno-smoke-host-token',
        approval: { mode: 'auto' },
      }),
    )
    const child = await startChild(
      DENO,
      [
        ...DENO_ARGS,
        '--config',
        join(dir.path, 'server.json'),
        '--workspace',
        join(dir.path, 'ws'),
        '--data-dir',
        join(dir.path, 'data'),
        '--port',
        '0',
      ],
      { cwd: root, env: { HOME: dir.path }, timeoutMs: 90_000 },
    )
    try {
      const health = await (await fetch(`${child.url}/health`)).json()
      assert.equal([health.ok, health.mode], [true, 'workspace'])

      // The state database on node:sqlite: a token row written, read back through a lookup, deleted.
      const host = { 'x-service-host-token': 'deno-smoke-host-token', 'content-type': 'application/json' }
      const issued = await fetch(`${child.url}/tokens`, {
        method: 'POST',
        headers: host,
        body: JSON.stringify({ scope: 'viewer', label: 'deno' }),
      })
      assert.is(issued.status, 201)
      const { id, token } = await issued.json()
      const listed = await fetch(`${child.url}/workspaces`, { headers: { authorization: `Bearer ${token}` } })
      assert.is(listed.status, 200)
      const [workspace] = (await listed.json()).items
      assert.is((await fetch(`${child.url}/tokens/${id}`, { method: 'DELETE', headers: host })).status, 200)
      assert.is((await fetch(`${child.url}/workspaces`, { headers: { authorization: `Bearer ${token}` } })).status, 401)

      // A change on disk is stored as an event (insert ... returning) and read back by cursor.
      mkdirSync(join(dir.path, 'ws/.opencode/commands'), { recursive: true })
      writeFileSync(join(dir.path, 'ws/.opencode/commands/hello.md'), '---\ndescription: hi\n---\nSay hi\n')
      const client = { authorization: 'Bearer deno-smoke-client-token' }
      let events: Array<{ seq: number; type: string }> = []
      for (let i = 0; i < 100 && events.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        events = (
          await (await fetch(`${child.url}/workspace/${workspace.id}/events?since=0`, { headers: client })).json()
        ).items
      }
      assert.ok(events.length > 0, 'the change arrived as an event')
      assert.ok(events[0]!.seq > 0)
    } finally {
      assert.is(await child.stop(), 0)
    }
  },
)

denoSuite.run()
