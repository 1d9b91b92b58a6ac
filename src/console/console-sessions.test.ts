import { assert, suite } from '../../tests/harness.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer } from '../workspace/testing/test-kit.ts'
import { CONSOLE_CODE_TTL_MS, CONSOLE_SESSION_TTL_MS, ConsoleSessions } from './console-sessions.ts'
import { consoleLink } from './console-url.ts'

const test = suite('console: workspace sessions')

/** The one-time code from the start-up banner, as a person would copy it from the link. */
function bannerCode(lines: string[]): string {
  const line = lines.find((l) => l.startsWith('console '))
  assert.ok(line, `no console line in ${JSON.stringify(lines)}`)
  const match = /\/console\/#code=(\S+)$/.exec(line!)
  assert.ok(match, line)
  return match![1]!
}

test('the start-up banner prints a one-time link that buys one owner session, once', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const code = bannerCode(server.app.onListening!({ host: '127.0.0.1', port: 4321 }))
    const first = await server.req('/console/sessions', { method: 'POST', json: { code } })
    assert.is(first.status, 201)
    const session = (await first.json()) as { token: string; expiresAt: number }
    assert.match(session.token, /^svc_console_/)
    const again = await server.req('/console/sessions', { method: 'POST', json: { code } })
    assert.is(again.status, 401, 'the code works once')
    // Owner reach: a host route and a viewer route both answer to the session.
    assert.is((await server.req('/tokens', { token: session.token })).status, 200)
    assert.is((await server.req('/workspaces', { token: session.token })).status, 200)
    const whoami = (await (await server.req('/whoami', { token: session.token })).json()) as Record<string, unknown>
    assert.is(JSON.stringify(whoami).includes(session.token), false, 'the session value is never echoed')
  } finally {
    await server.dispose()
  }
})

test('a wrong or expired code is refused and does not spend the real one', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const code = bannerCode(server.app.onListening!({ host: '127.0.0.1', port: 4321 }))
    const wrong = await server.req('/console/sessions', { method: 'POST', json: { code: `${code}x` } })
    assert.is(wrong.status, 401)
    assert.is(((await wrong.json()) as { code: string }).code, 'unauthorized')
    server.clock.advance(CONSOLE_CODE_TTL_MS + 1000)
    const late = await server.req('/console/sessions', { method: 'POST', json: { code } })
    assert.is(late.status, 401, 'the code expires an hour after start')
  } finally {
    await server.dispose()
  }
})

test('the host token buys a session; the client token does not', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const byClient = await server.req('/console/sessions/host', { method: 'POST', token: CLIENT_TOKEN })
    assert.is(byClient.status, 403)
    const anonymous = await server.req('/console/sessions/host', { method: 'POST' })
    assert.is(anonymous.status, 401)
    const byHost = await server.req('/console/sessions/host', { method: 'POST', hostToken: HOST_TOKEN })
    assert.is(byHost.status, 201)
    const { token } = (await byHost.json()) as { token: string }
    assert.is((await server.req('/approvals', { token })).status, 200)
  } finally {
    await server.dispose()
  }
})

test('sign-out ends the session at once and leaves other sessions alone', async () => {
  const server = await startTestServer({ fixture: false })
  try {
    const make = async () =>
      (
        (await (await server.req('/console/sessions/host', { method: 'POST', hostToken: HOST_TOKEN })).json()) as {
          token: string
        }
      ).token
    const a = await make()
    const b = await make()
    const out = await server.req('/console/sessions/current', { method: 'DELETE', token: a })
    assert.is(out.status, 200)
    assert.equal(await out.json(), { ok: true, ended: true })
    assert.is((await server.req('/tokens', { token: a })).status, 401)
    assert.is((await server.req('/tokens', { token: b })).status, 200)
  } finally {
    await server.dispose()
  }
})

test('sessions live in memory only: a restart signs every console out', async () => {
  let server = await startTestServer({ fixture: false })
  try {
    const created = await server.req('/console/sessions/host', { method: 'POST', hostToken: HOST_TOKEN })
    const { token } = (await created.json()) as { token: string }
    server = await server.restart()
    assert.is((await server.req('/tokens', { token })).status, 401)
  } finally {
    await server.dispose()
  }
})

test('a session expires after its lifetime', () => {
  let now = 1_000_000
  const sessions = new ConsoleSessions(() => now)
  const { token } = sessions.create()
  assert.ok(sessions.check(token))
  now += CONSOLE_SESSION_TTL_MS + 1
  assert.is(sessions.check(token), null)
  assert.is(sessions.check('svc_console_not-a-session'), null)
  assert.is(sessions.check('some-other-token'), null)
})

test('the link points at loopback when the server listens on every address', () => {
  assert.is(consoleLink({ host: '0.0.0.0', port: 8787 }, 'c'), 'http://127.0.0.1:8787/console/#code=c')
  assert.is(consoleLink({ host: '::', port: 8787 }, 'c'), 'http://[::1]:8787/console/#code=c')
  assert.is(consoleLink({ host: '192.168.1.5', port: 1 }, 'c'), 'http://192.168.1.5:1/console/#code=c')
})

test.run()
