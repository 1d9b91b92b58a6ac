import { cpSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, runCommand, startChild, suite, withTempDir } from '../../../tests/harness.ts'
import { FIXTURE } from '../testing/test-kit.ts'

const test = suite('workspace/process', { timeoutMs: 60_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')
const HOST = 'process-host-token-0123456789'
const CLIENT = 'process-client-token-0123456789'

function writeConfig(dir: string, extra: Record<string, unknown> = {}): string {
  const config = join(dir, 'server.json')
  cpSync(FIXTURE, join(dir, 'ws'), { recursive: true })
  writeFileSync(
    config,
    JSON.stringify({
      token: CLIENT,
      hostToken: HOST,
      workspaces: [{ path: 'ws' }],
      dataDir: 'data',
      approval: { mode: 'auto' },
      ...extra,
    }),
  )
  return config
}

test('a token issued with the host command line survives a restart of the real server, with events and audit', async () => {
  await withTempDir(async (dir) => {
    const config = writeConfig(dir)
    const env = { HOME: dir, SERVICE_HOST_TOKEN: HOST }
    let server = await startChild(BUN, [ENTRY, '--config', config, '--port', '0'], { cwd: dir, env: { HOME: dir } })
    let token: string
    let wsId: string
    try {
      const created = await runCommand(
        BUN,
        [ENTRY, 'tokens', 'create', 'collaborator', '--label', 'ci', '--url', server.url],
        { cwd: dir, env },
      )
      assert.is(created.code, 0, created.stderr)
      token = /token \(shown once\): (\S+)/.exec(created.stdout)![1]!
      wsId = (await (await fetch(`${server.url}/workspaces`, { headers: { authorization: `Bearer ${token}` } })).json())
        .items[0].id
      const write = await fetch(`${server.url}/workspace/${wsId}/commands`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'persisted', template: 'x' }),
      })
      assert.is(write.status, 200)
    } finally {
      assert.is(await server.stop(), 0)
    }
    server = await startChild(BUN, [ENTRY, '--config', config, '--port', '0'], { cwd: dir, env: { HOME: dir } })
    try {
      const auth = { authorization: `Bearer ${token}` }
      assert.is((await fetch(`${server.url}/whoami`, { headers: auth })).status, 200)
      const events = await (await fetch(`${server.url}/workspace/${wsId}/events`, { headers: auth })).json()
      assert.ok(events.items.some((e: { trigger?: { name?: string } }) => e.trigger?.name === 'persisted'))
      const audit = await (await fetch(`${server.url}/workspace/${wsId}/audit`, { headers: auth })).json()
      assert.equal(
        audit.items.map((e: { action: string }) => e.action),
        ['commands.upsert'],
      )
      const listed = await runCommand(BUN, [ENTRY, 'tokens', 'list', '--url', server.url], { cwd: dir, env })
      assert.match(listed.stdout, /collaborator {2}ci/)
      assert.not.ok(server.stdoutLines.join('\n').includes(token!), 'the server never prints an issued token')
    } finally {
      await server.stop()
    }
  })
})

test('start-up warns when CORS allows any origin on a non-loopback address', async () => {
  await withTempDir(async (dir) => {
    const config = writeConfig(dir, { corsOrigins: ['*'] })
    const server = await startChild(BUN, [ENTRY, '--config', config, '--port', '0', '--host', '0.0.0.0'], {
      cwd: dir,
      env: { HOME: dir },
    })
    try {
      await new Promise((r) => setTimeout(r, 100))
      assert.match(server.stderr(), /CORS allows any origin/)
    } finally {
      await server.stop()
    }
  })
})

test.run()
