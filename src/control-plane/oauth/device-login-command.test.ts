import { spawn } from 'node:child_process'
import { assert, suite } from '../../../tests/harness.ts'
import { serve } from '../../serve.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { deviceLoginCommand } from './device-login-command.ts'

const test = suite('control-plane/oauth/device-login-command')

/** Runs the argv; `onCode` is called once with the user code the program shows on stderr. */
function runLogin(
  argv: string[],
  onCode: (code: string) => Promise<void>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let seen = false
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    child.stdout.on('data', (d) => {
      stdout += d.toString()
    })
    child.stderr.on('data', (d) => {
      stderr += d.toString()
      const match = /code ([B-Z]{4}-[B-Z]{4})/.exec(stderr)
      if (match && !seen) {
        seen = true
        onCode(match[1]!).catch(reject)
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** The plane listening on a loopback port, its clock following real time (the interval is checked against it). */
async function listening(t: TestControlPlane) {
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: t.app.fetch })
  const ticker = setInterval(() => t.clock.advance(50), 50)
  return {
    url: `http://127.0.0.1:${listener.port}/`,
    async stop() {
      clearInterval(ticker)
      await listener.stop()
    },
  }
}

test('the sh + curl program signs in: code on stderr, approval through the API, only the token on stdout', async () => {
  const t = await startTestControlPlane({ file: { oauth: { deviceIntervalSeconds: 1 } } })
  const server = await listening(t)
  try {
    const org = await buildFixtureOrg(t.client, 'sh')
    const argv = deviceLoginCommand(server.url, 'opencode')
    assert.is(argv[0], 'sh')
    assert.is(argv[1], '-c')
    assert.not.ok(argv[2]!.includes('127.0.0.1'), 'the URL is an argument, not part of the script')
    assert.not.ok(/\bjq\b/.test(argv[2]!), 'no jq')
    let approvedCode = ''
    const result = await runLogin(argv, async (code) => {
      approvedCode = code
      // Let it poll unapproved at least once first.
      await new Promise((r) => setTimeout(r, 1500))
      const approved = await t.client.post('/v1/oauth/device/approve', {
        token: org.member.token,
        json: { userCode: code },
      })
      assert.is(approved.status, 200)
    })
    assert.is(result.code, 0, result.stderr)
    assert.match(result.stdout, /^oat_[A-Za-z0-9_-]+\n$/)
    assert.ok(result.stderr.includes(`${server.url}console/#device=${approvedCode}`), result.stderr)
    assert.match(result.stderr, /Signed in to Org sh/)
    const me = await t.client.get('/v1/me', { token: result.stdout.trim() })
    assert.is(me.status, 200)
    assert.is(me.body.user.id, org.member.userId)
  } finally {
    await server.stop()
    await t.close()
  }
})

test('the program exits 1 with a reason when the sign-in is denied, the client is unknown or the server is down', async () => {
  const t = await startTestControlPlane({ file: { oauth: { deviceIntervalSeconds: 1 } } })
  const server = await listening(t)
  try {
    const org = await buildFixtureOrg(t.client, 'shdeny')
    const denied = await runLogin(deviceLoginCommand(server.url, 'service-cli'), async (code) => {
      const res = await t.client.post('/v1/oauth/device/deny', { token: org.member.token, json: { userCode: code } })
      assert.is(res.status, 204)
    })
    assert.is(denied.code, 1)
    assert.is(denied.stdout, '')
    assert.match(denied.stderr, /denied/)
    const unknown = await runLogin(deviceLoginCommand(server.url, 'nobody'), async () => {})
    assert.is(unknown.code, 1)
    assert.is(unknown.stdout, '')
    assert.match(unknown.stderr, /Unknown client_id/)
  } finally {
    await server.stop()
    await t.close()
  }
  const down = await runLogin(deviceLoginCommand(server.url, 'opencode'), async () => {})
  assert.is(down.code, 1)
  assert.is(down.stdout, '')
  assert.match(down.stderr, /Could not reach|could not start/i)
})

test('deviceLoginCommand refuses values that are not a plain URL and client id', () => {
  assert.throws(() => deviceLoginCommand('http://x/$(reboot)', 'opencode'))
  assert.throws(() => deviceLoginCommand('file:///etc', 'opencode'))
  assert.throws(() => deviceLoginCommand('http://x', 'a b'))
})

test.run()
