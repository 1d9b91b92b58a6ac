/**
 * `service-server org token <url>` as a user runs it: the compiled binary against a live control
 * plane, the approval made through the API while the binary waits.
 */
import { spawn } from 'node:child_process'
import { assert, compiledBinary, runCommand, suite } from '../harness.ts'
import { serve } from '../../src/serve.ts'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { startTestControlPlane } from '../../src/control-plane/testing/test-control-plane.ts'

const test = suite('smoke/org-token', { timeoutMs: 300_000 })

/** Runs the binary; `onCode` gets the code it prints on stderr. */
function run(binary: string, args: string[], onCode: (code: string) => Promise<void>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let seen = false
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
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

test('the binary prints the verification URL and code on stderr, waits for approval, and prints only the token on stdout', async () => {
  const binary = await compiledBinary()
  const t = await startTestControlPlane({ file: { oauth: { deviceIntervalSeconds: 1 } } })
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: t.app.fetch })
  // The plane's clock is the test's; it follows real time so the poll interval is honoured.
  const ticker = setInterval(() => t.clock.advance(50), 50)
  const url = `http://127.0.0.1:${listener.port}`
  try {
    const org = await buildFixtureOrg(t.client, 'cli')
    const signedIn = await run(binary, ['org', 'token', url], async (code) => {
      const approved = await t.client.post('/v1/oauth/device/approve', {
        token: org.member.token,
        json: { userCode: code },
      })
      assert.is(approved.status, 200)
    })
    assert.is(signedIn.code, 0, signedIn.stderr)
    assert.match(signedIn.stdout, /^oat_[A-Za-z0-9_-]+\n$/)
    assert.match(signedIn.stderr, new RegExp(`${url}/console/#device=[B-Z]{4}-[B-Z]{4}`))
    assert.match(signedIn.stderr, /Signed in to Org cli\./)
    const me = await t.client.get('/v1/me', { token: signedIn.stdout.trim() })
    assert.is(me.body.credential.clientId, 'service-cli')
    assert.is(me.body.user.id, org.member.userId)

    const denied = await run(binary, ['org', 'token', url], async (code) => {
      assert.is(
        (await t.client.post('/v1/oauth/device/deny', { token: org.member.token, json: { userCode: code } })).status,
        204,
      )
    })
    assert.is(denied.code, 1)
    assert.is(denied.stdout, '')
    assert.match(denied.stderr, /denied/)
  } finally {
    clearInterval(ticker)
    await listener.stop()
    await t.close()
  }
  const usage = await runCommand(binary, ['org', 'token'])
  assert.is(usage.code, 2)
  assert.match(usage.stderr, /usage: service-server org token <control-plane-url>/)
  const notHttp = await runCommand(binary, ['org', 'token', 'ftp://x'])
  assert.is(notHttp.code, 2)
  const down = await runCommand(binary, ['org', 'token', url])
  assert.is(down.code, 1)
  assert.is(down.stdout, '')
  assert.match(down.stderr, /Could not reach/)
})

test.run()
