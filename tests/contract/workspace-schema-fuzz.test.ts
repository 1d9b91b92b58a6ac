/**
 * The schema fuzzer (`tests/schema-fuzz.ts`) over every operation of the workspace surface:
 * hostile variants of every path, query and body field, sent over HTTP through the real listener
 * with an owner token and the host token, must never answer 500 (or an undocumented 5xx). The
 * workspace id and a live file session fill the path parameters, so the variants reach the
 * handlers. Seeded: a failure names its case.
 */
import { HOST_TOKEN_HEADER } from '../../src/workspace/access/auth.ts'
import { serve, type Listener } from '../../src/serve.ts'
import { HOST_TOKEN, startTestServer, type TestServer } from '../../src/workspace/testing/test-kit.ts'
import { assert, suite } from '../harness.ts'
import { describeFailures, fuzzCases, runFuzzCases } from '../schema-fuzz.ts'

const test = suite('contract/workspace-schema-fuzz', { timeoutMs: 120_000 })

const SEED = 29

let s: TestServer
let listener: Listener

test.before(async () => {
  s = await startTestServer({ approval: 'auto' })
  listener = await serve({ host: '127.0.0.1', port: 0, fetch: (request, peer) => s.app.fetch(request, peer) })
})

test.after(async () => {
  await listener.stop()
  await s.dispose()
})

test('no hostile variant of any workspace operation answers 500, and the credentials survive the run', async () => {
  const owner = (await s.app.services.tokens.create({ scope: 'owner', label: 'fuzz owner' })).token
  const headers = { authorization: `Bearer ${owner}`, [HOST_TOKEN_HEADER]: HOST_TOKEN }
  const base = `http://127.0.0.1:${listener.port}`
  const opened = await fetch(`${base}/workspace/${s.wsId}/files/sessions`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: '{}',
  })
  assert.is(opened.status, 200)
  const sessionId: string = (await opened.json()).session.id
  const doc = await (await fetch(`${base}/openapi.json`)).json()
  const cases = fuzzCases(doc, { seed: SEED, pathValues: { id: s.wsId, sessionId } })
  assert.ok(cases.length > 500, `${cases.length} cases`)
  const started = Date.now()
  const { failures, statuses } = await runFuzzCases(base, cases, headers)
  assert.equal(failures.length, 0, describeFailures(failures))
  const unauthorized = (statuses.get(401) ?? 0) + (statuses.get(403) ?? 0)
  assert.ok(unauthorized < cases.length / 10, `${unauthorized} of ${cases.length} were 401 or 403`)
  const whoami = await fetch(`${base}/whoami`, { headers })
  assert.is(whoami.status, 200, 'the owner token still works after the run')
  assert.ok(Date.now() - started < 60_000, `ran in ${Date.now() - started} ms`)
})

test.run()
