/**
 * The schema fuzzer (`tests/schema-fuzz.ts`) over every operation of the control plane, on the
 * engine of this pass (SQLite, then PostgreSQL): hostile variants of every path, query and body
 * field, sent over HTTP through the real listener with an owner's credentials, must never answer
 * 500 (or an undocumented 5xx). Real ids of a fixture organization fill the path parameters so the
 * variants reach past 404s into handlers and the database. Seeded: a failure names its case.
 */
import { serve, type Listener } from '../serve.ts'
import { assert, suite } from '../../tests/harness.ts'
import { describeFailures, fuzzCases, runFuzzCases } from '../../tests/schema-fuzz.ts'
import { buildFixtureOrg } from './testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/schema-fuzz', { timeoutMs: 120_000 })

const SEED = 29

let t: TestControlPlane
let listener: Listener

test.before(async () => {
  // The run sends ~2,000 requests with one session in seconds, past any per-credential burst; a
  // 429 would hide the handlers this suite is here to reach.
  t = await startTestControlPlane({ file: { rateLimit: { enabled: false } } })
  listener = await serve({ host: '127.0.0.1', port: 0, fetch: (request, peer) => t.app.fetch(request, peer) })
})

test.after(async () => {
  await listener.stop()
  await t.close()
})

test('no hostile variant of any control-plane operation answers 500, and the credential survives the run', async () => {
  const org = await buildFixtureOrg(t.client, 'fuzz')
  const auth = { authorization: `Bearer ${org.owner.token}` }
  const custom = await t.client.post('/v1/config-objects', {
    token: org.owner.token,
    json: { type: 'custom', sourceMode: 'cloud', title: 'fuzzed', input: { rawSourceText: '{"a":1}' } },
  })
  assert.is(custom.status, 201)
  const team = await t.client.post('/v1/teams', { token: org.owner.token, json: { name: 'fuzzers' } })
  assert.is(team.status, 201)
  // More real containers, so their routes' variants reach the handlers and the database.
  const created: Record<string, string> = {}
  for (const [param, path] of [
    ['pluginId', '/v1/plugins'],
    ['marketplaceId', '/v1/marketplaces'],
    ['hubId', '/v1/skill-hubs'],
  ] as const) {
    const res = await t.client.post(path, { token: org.owner.token, json: { name: `fuzz ${param}` } })
    assert.is(res.status, 201, `${path}: ${JSON.stringify(res.body)}`)
    created[param] = res.body.item.id
  }
  const base = `http://127.0.0.1:${listener.port}`
  const doc = await (await fetch(`${base}/openapi.json`)).json()
  const cases = fuzzCases(doc, {
    seed: SEED,
    pathValues: {
      memberId: org.member.memberId,
      configObjectId: custom.body.item.id,
      versionId: custom.body.item.latestVersion.id,
      teamId: team.body.item.id,
      ...created,
    },
  })
  assert.ok(cases.length > 500, `${cases.length} cases`)
  const started = Date.now()
  const { failures, statuses } = await runFuzzCases(base, cases, auth)
  assert.equal(failures.length, 0, describeFailures(failures))
  // The run did reach the handlers: most answers are validation refusals, not auth failures.
  const unauthorized = statuses.get(401) ?? 0
  assert.ok(unauthorized < cases.length / 10, `${unauthorized} of ${cases.length} were 401`)
  assert.ok((statuses.get(422) ?? 0) > cases.length / 4, JSON.stringify([...statuses]))
  const me = await fetch(`${base}/v1/me`, { headers: auth })
  assert.is(me.status, 200, 'the owner session still works after the run')
  assert.ok(Date.now() - started < 60_000, `ran in ${Date.now() - started} ms`)
})

test.run()
