/**
 * The control plane as a real process over real HTTP: the per-address sign-in throttle needs the
 * TCP peer address, which only the listener knows, so this is checked end to end.
 */
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, startChild, suite, withTempDir } from '../../tests/harness.ts'

const test = suite('control-plane/over-http', { timeoutMs: 60_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../bin/service-server.ts')

async function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
}

test('failed sign-ins from one peer address are throttled across accounts, with Retry-After', async () => {
  await withTempDir(async (dir) => {
    const config = join(dir, 'cp.json')
    writeFileSync(
      config,
      JSON.stringify({
        signInThrottle: { maxFailuresPerAccount: 100, maxFailuresPerAddress: 3, windowSeconds: 120 },
        logRequests: false,
      }),
    )
    const child = await startChild(
      BUN,
      [ENTRY, '--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
      { cwd: dir, env: { HOME: dir } },
    )
    try {
      const signUp = await post(`${child.url}/v1/auth/sign-up`, {
        email: 'real@http.test',
        password: 'real password',
        name: 'Real',
      })
      assert.is(signUp.status, 201)
      const { session } = (await signUp.json()) as { session: { token: string } }
      for (let i = 0; i < 3; i++)
        assert.is(
          (await post(`${child.url}/v1/auth/sign-in`, { email: `spray${i}@http.test`, password: 'wrong password' }))
            .status,
          401,
        )
      const blocked = await post(`${child.url}/v1/auth/sign-in`, { email: 'real@http.test', password: 'real password' })
      assert.is(blocked.status, 429)
      // The window opened at the first failure; on a loaded machine a second may pass before the refusal.
      const retryAfter = Number(blocked.headers.get('retry-after'))
      assert.ok(retryAfter >= 115 && retryAfter <= 120, `retry-after ${retryAfter}`)
      // Sessions already issued keep working; only sign-in is throttled.
      const me = await fetch(`${child.url}/v1/me`, { headers: { authorization: `Bearer ${session.token}` } })
      assert.is(me.status, 200)
    } finally {
      await child.stop()
    }
  })
})

test.run()
