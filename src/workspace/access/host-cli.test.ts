import { assert, suite } from '../../../tests/harness.ts'
import { serve } from '../../serve.ts'
import { runHostCli, resolveTarget } from './host-cli.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/host-cli', { timeoutMs: 20_000 })

async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = []
  const err: string[] = []
  const code = await runHostCli(args, {
    env,
    cwd: process.cwd(),
    stdout: (l) => out.push(l),
    stderr: (l) => err.push(l),
  })
  return { code, out: out.join('\n'), err: err.join('\n') }
}

test('tokens create, list and revoke work against a running server', async () => {
  const s = await startTestServer()
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: s.app.fetch })
  try {
    const url = `http://127.0.0.1:${listener.port}`
    const created = await cli([
      'tokens',
      'create',
      'viewer',
      '--label',
      'tablet',
      '--ttl',
      '600',
      '--url',
      url,
      '--host-token',
      HOST_TOKEN,
    ])
    assert.is(created.code, 0, created.err)
    const token = /token \(shown once\): (\S+)/.exec(created.out)![1]!
    const id = /^id: (\S+)/m.exec(created.out)![1]!
    assert.is((await s.req('/workspaces', { token })).status, 200)
    const listed = await cli(['tokens', 'list', '--url', url], { SERVICE_HOST_TOKEN: HOST_TOKEN })
    assert.is(listed.code, 0)
    assert.ok(listed.out.includes(id) && listed.out.includes('tablet'))
    assert.not.ok(listed.out.includes(token))
    assert.is((await cli(['tokens', 'revoke', id, '--url', url, '--host-token', HOST_TOKEN])).code, 0)
    assert.is((await s.req('/workspaces', { token })).status, 401)
    const wrong = await cli(['tokens', 'list', '--url', url, '--host-token', 'not-the-host-token'])
    assert.is(wrong.code, 1)
    assert.match(wrong.err, /401 unauthorized/)
    assert.is((await cli(['tokens', 'explode'])).code, 2)
  } finally {
    await listener.stop()
    await s.dispose()
  }
})

test('approvals list and allow decide a pending write', async () => {
  const s = await startTestServer({ approval: 'manual' })
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: s.app.fetch })
  try {
    const url = `http://127.0.0.1:${listener.port}`
    const write = s.req(`/workspace/${s.wsId}/commands`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'via-cli', template: 'x' },
    })
    const listed = await eventually(async () => {
      const r = await cli(['approvals', 'list', '--url', url, '--host-token', HOST_TOKEN])
      return r.out.includes('commands.upsert') ? r : undefined
    })
    const id = listed.out.split(/\s+/)[0]!
    const allowed = await cli(['approvals', 'allow', id, '--url', url, '--host-token', HOST_TOKEN])
    assert.is(allowed.out, 'allowed')
    assert.is((await write).status, 200)
    const json = await cli(['approvals', 'list', '--json', '--url', url, '--host-token', HOST_TOKEN])
    assert.equal(JSON.parse(json.out), { items: [] })
  } finally {
    await listener.stop()
    await s.dispose()
  }
})

test('the target comes from flags, then environment, then the config file and its credentials', () => {
  assert.equal(resolveTarget({ url: 'http://h:1/', 'host-token': 't' }, { env: {}, cwd: '/' }), {
    baseUrl: 'http://h:1',
    hostToken: 't',
  })
  assert.equal(
    resolveTarget({}, { env: { SERVICE_URL: 'http://e:2', SERVICE_HOST_TOKEN: 'e', HOME: '/nonexistent' }, cwd: '/' }),
    { baseUrl: 'http://e:2', hostToken: 'e' },
  )
  assert.equal(resolveTarget({}, { env: { HOME: '/nonexistent' }, cwd: '/' }), {
    baseUrl: 'http://127.0.0.1:8787',
    hostToken: undefined,
  })
})

test.run()

const dispatch = suite('workspace/host-cli dispatch')

dispatch('service-server dispatches approvals and tokens words to the host command line', async () => {
  const { main } = await import('../../main.ts')
  const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs')
  const { join } = await import('node:path')
  const { tmpdir } = await import('node:os')
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'))
  const s = await startTestServer()
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: s.app.fetch })
  try {
    writeFileSync(join(dir, 'server.json'), JSON.stringify({ host: '127.0.0.1', port: listener.port }))
    writeFileSync(join(dir, 'credentials.json'), JSON.stringify({ hostToken: HOST_TOKEN }))
    const out: string[] = []
    const code = await main(['tokens', 'list', '--config', join(dir, 'server.json')], {
      env: { HOME: dir },
      cwd: dir,
      stdout: (l) => out.push(l),
      stderr: (l) => out.push(l),
      stopSignal: new Promise(() => {}),
    })
    assert.is(code, 0, out.join('\n'))
    assert.is(out.join('\n'), 'no issued tokens')
  } finally {
    await listener.stop()
    await s.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
})

dispatch.run()
