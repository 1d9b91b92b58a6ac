/**
 * The console's API client (web/api.mjs, the one its pages use) against a real control plane over
 * HTTP: every write carries an Idempotency-Key of its own, and a write answered 503 is sent again
 * with the same key, so the server runs it at most once.
 */
import { assert, suite } from '../../tests/harness.ts'
import { buildFixtureOrg } from '../control-plane/testing/org-fixture.ts'
import { startTestControlPlane } from '../control-plane/testing/test-control-plane.ts'
import { serve } from '../serve.ts'

interface Api {
  get(path: string): Promise<any>
  post(path: string, body?: unknown): Promise<any>
}
type CreateApi = (options: { headers: () => Record<string, string> }) => Api

const test = suite('console: API client writes', { timeoutMs: 60_000 })

test('each write carries its own key, and a 503 is retried with the same key until the write is answered once', async () => {
  const { createApi } = (await import(String(new URL('./web/api.mjs', import.meta.url)))) as { createApi: CreateApi }
  const t = await startTestControlPlane()
  const seen: Array<{ method: string; key: string | null }> = []
  let refuseNext = 0
  // In front of the plane: records each request's key and answers 503 while asked to.
  const listener = await serve({
    host: '127.0.0.1',
    port: 0,
    fetch: (request: Request) => {
      seen.push({ method: request.method, key: request.headers.get('idempotency-key') })
      if (refuseNext > 0) {
        refuseNext--
        return Response.json(
          { code: 'outcome_unknown', message: 'lost' },
          { status: 503, headers: { 'retry-after': '0' } },
        )
      }
      return t.app.fetch(request)
    },
  })
  try {
    const org = await buildFixtureOrg(t.client, 'console-api')
    const api = createApi({ headers: () => ({ authorization: `Bearer ${org.owner.token}` }) })
    const base = `http://127.0.0.1:${listener.port}`
    await api.get(`${base}/v1/teams`)
    await api.post(`${base}/v1/teams`, { name: 'First' })
    await api.post(`${base}/v1/teams`, { name: 'Second' })
    assert.is(seen[0]!.key, null, 'reads carry no key')
    assert.match(seen[1]!.key ?? '', /^[0-9a-f]{32}$/)
    assert.ok(seen[1]!.key !== seen[2]!.key, 'one key per write')

    seen.length = 0
    refuseNext = 2
    const created = await api.post(`${base}/v1/teams`, { name: 'Third' })
    assert.is(created.item.name, 'Third')
    assert.is(seen.length, 3)
    assert.ok(
      seen.every((s) => s.key === seen[0]!.key && s.key !== null),
      'the same key on every try',
    )
    const teams = await t.app.deps.db.selectFrom('team').select('name').where('name', '=', 'Third').execute()
    assert.is(teams.length, 1)
  } finally {
    await listener.stop()
    await t.close()
  }
})

test.run()
