/**
 * With `--log-format json` every line on stderr is JSON, also when PostgreSQL ends the server's
 * connections (57P01, as `pg_terminate_backend` and a server shutdown do): each lost connection is
 * one `warn` line, and the server goes on answering on fresh connections (issue 29 §6). Runs in the
 * PostgreSQL pass only: it is about that engine's connections.
 */
import { join, resolve } from 'node:path'
import pg from 'pg'
import { assert, BUN, startChild, suite, withPostgresDatabase, withTempDir } from '../../tests/harness.ts'
import { TEST_ENGINE, testServerUrl } from './testing/test-database.ts'

const test = suite('control-plane/postgres-log-lines', { timeoutMs: 90_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../bin/service-server.ts')

const json = { 'content-type': 'application/json' }

if (TEST_ENGINE === 'postgres') {
  test('connections PostgreSQL terminates (57P01) are logged as one JSON warn line each, and nothing else reaches stderr', async () => {
    await withTempDir(async (dir) => {
      await withPostgresDatabase(async (url) => {
        const database = new URL(url).pathname.slice(1)
        // Six clients hammer one session past its rate-limit burst; what is checked here is the
        // log, so the limiter is off.
        const child = await startChild(
          BUN,
          [ENTRY, '--mode', 'control-plane', '--data-dir', join(dir, 'data'), '--port', '0', '--log-format', 'json'],
          { cwd: dir, env: { HOME: dir, SERVICE_DATABASE_URL: url, SERVICE_RATE_LIMIT: '0' } },
        )
        const admin = new pg.Client({ connectionString: testServerUrl() })
        await admin.connect()
        let stream: ReadableStreamDefaultReader<Uint8Array> | undefined
        try {
          const signUp = await fetch(`${child.url}/v1/auth/sign-up`, {
            method: 'POST',
            headers: json,
            body: JSON.stringify({ email: 'logs@pg.test', password: 'a long password', name: 'Logs' }),
          })
          assert.is(signUp.status, 201)
          const token: string = (await signUp.json()).session.token
          const auth = { authorization: `Bearer ${token}` }
          const org = await fetch(`${child.url}/v1/orgs`, {
            method: 'POST',
            headers: { ...json, ...auth },
            body: JSON.stringify({ name: 'Logs' }),
          })
          assert.is(org.status, 201)
          // A live feed holds the dedicated LISTEN connection open, so it is terminated too.
          const feed = await fetch(`${child.url}/v1/events`, { headers: { ...auth, accept: 'text/event-stream' } })
          assert.is(feed.status, 200)
          stream = feed.body!.getReader()
          const reading = (async () => {
            while (!(await stream!.read()).done) {}
          })().catch(() => {})

          let load = true
          const clients = Array.from({ length: 6 }, async () => {
            while (load) await (await fetch(`${child.url}/v1/me`, { headers: auth })).text()
          })
          for (let round = 0; round < 8; round++) {
            await admin.query(
              'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
              [database],
            )
            await new Promise((r) => setTimeout(r, 150))
          }
          load = false
          await Promise.all(clients)
          // Fresh connections serve the next requests.
          const me = await fetch(`${child.url}/v1/me`, { headers: auth })
          assert.is(me.status, 200)
          await me.text()
          await stream.cancel().catch(() => {})
          await reading
        } finally {
          await admin.end()
          await child.stop()
        }
        const lines = child
          .stderr()
          .split('\n')
          .filter((line) => line !== '')
        const notJson = lines.filter((line) => {
          try {
            return typeof JSON.parse(line) !== 'object'
          } catch {
            return true
          }
        })
        assert.equal(notJson.slice(0, 5), [], `${notJson.length} of ${lines.length} stderr lines are not JSON`)
        const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
        const lost = parsed.filter((p) => p.msg === 'database connection lost')
        assert.ok(lost.length >= 1, 'each terminated connection is logged')
        const odd = lost.filter((p) => p.level !== 'warn' || (p.connection !== 'pool' && p.connection !== 'listen'))
        assert.equal(odd, [])
        assert.ok(
          lost.some((p) => p.code === '57P01'),
          JSON.stringify(lost.slice(0, 3)),
        )
        assert.ok(
          lost.some((p) => p.connection === 'listen'),
          'the LISTEN connection is reported as such',
        )
        assert.not.ok(
          parsed.some((p) => p.level === 'error'),
          JSON.stringify(parsed.filter((p) => p.level === 'error').slice(0, 3)),
        )
      })
    })
  })
}

test.run()
