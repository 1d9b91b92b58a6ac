/**
 * Hostile input is a documented 4xx with nothing written, on both engines (issue 29 §4): alias
 * bombs in frontmatter, JSON nested past the limit (in the body and in a `custom` object's source
 * text), the NUL character anywhere in a body, a query or a path, and numbers beyond the integer
 * columns they land in. Every response goes through the contract client, so an undeclared status
 * fails too.
 */
import { assert, suite } from '../../tests/harness.ts'
import { startAsyncTestPlane } from './testing/async-test-kit.ts'
import { buildFixtureOrg, type FixtureOrg } from './testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from './testing/test-control-plane.ts'
import { INT_COLUMN_MAX } from './wire/common.ts'

const test = suite('control-plane/hostile-input', { timeoutMs: 90_000 })

let t: TestControlPlane
let org: FixtureOrg

test.before(async () => {
  t = await startTestControlPlane()
  org = await buildFixtureOrg(t.client, 'hostile')
})

test.after(async () => {
  await t.close()
})

/** Nine aliases of nine aliases, five levels: 59,049 strings from a 300-byte block. */
const ALIAS_BOMB = [
  '---',
  'name: bomb',
  'description: an alias bomb',
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
  'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
  'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
  'e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]',
  '---',
  'Body.',
  '',
].join('\n')

const deepJson = (levels: number) => `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`

async function objectCount(): Promise<number> {
  const rows = await t.app.deps.db.selectFrom('config_object').select('id').execute()
  return rows.length
}

async function versionCount(): Promise<number> {
  const rows = await t.app.deps.db.selectFrom('config_object_version').select('id').execute()
  return rows.length
}

test('a YAML alias bomb in skill frontmatter is 422 invalid_frontmatter on both create routes, nothing written', async () => {
  const before = [await objectCount(), await versionCount()]
  const skill = await t.client.post('/v1/skills', { token: org.owner.token, json: { skillMd: ALIAS_BOMB } })
  assert.is(skill.status, 422)
  assert.is(skill.body.code, 'validation_failed')
  assert.is(skill.body.details.reason, 'invalid_frontmatter')
  assert.match(skill.body.message, /alias/)
  const object = await t.client.post('/v1/config-objects', {
    token: org.owner.token,
    json: { type: 'skill', sourceMode: 'cloud', title: 'bomb', input: { rawSourceText: ALIAS_BOMB } },
  })
  assert.is(object.status, 422)
  assert.is(object.body.details.reason, 'invalid_frontmatter')
  assert.equal([await objectCount(), await versionCount()], before)
})

test('a custom object whose source text nests 20,000 deep is 422 on create and on version append, nothing written', async () => {
  const created = await t.client.post('/v1/config-objects', {
    token: org.owner.token,
    json: { type: 'custom', sourceMode: 'cloud', title: 'shallow', input: { rawSourceText: '{"ok":true}' } },
  })
  assert.is(created.status, 201)
  const id: string = created.body.item.id
  const before = [await objectCount(), await versionCount()]
  const deep = await t.client.post('/v1/config-objects', {
    token: org.owner.token,
    json: { type: 'custom', sourceMode: 'cloud', title: 'deep', input: { rawSourceText: deepJson(20_000) } },
  })
  assert.is(deep.status, 422)
  assert.is(deep.body.details.reason, 'invalid_json')
  assert.match(deep.body.message, /NestingTooDeep/)
  const appended = await t.client.post(`/v1/config-objects/${id}/versions`, {
    token: org.owner.token,
    json: { input: { rawSourceText: deepJson(20_000) } },
  })
  assert.is(appended.status, 422)
  assert.is(appended.body.details.reason, 'invalid_json')
  // 60 levels of source text are fine: the limit is far from any real config.
  const fine = await t.client.post(`/v1/config-objects/${id}/versions`, {
    token: org.owner.token,
    json: { input: { rawSourceText: deepJson(60) } },
  })
  assert.is(fine.status, 201)
  assert.equal([await objectCount(), await versionCount()], [before[0], before[1]! + 1])
})

test('a request body nested past 64 levels is 422 with the limit, before anything parses it', async () => {
  const before = [await objectCount(), await versionCount()]
  const body = `{"type":"custom","sourceMode":"cloud","title":"np","input":{"normalizedPayload":${deepJson(20_000)}}}`
  const res = await t.client.post('/v1/config-objects', { token: org.owner.token, body })
  assert.is(res.status, 422)
  assert.is(res.body.code, 'validation_failed')
  assert.is(res.body.details.maxDepth, 64)
  assert.equal([await objectCount(), await versionCount()], before)
})

test('the NUL character in a body field, a nested key, a query parameter or a path is refused, nothing written', async () => {
  const orgs = await t.app.deps.db.selectFrom('organization').select('id').execute()
  const named = await t.client.post('/v1/orgs', { token: org.owner.token, json: { name: 'a\u0000b' } })
  assert.is(named.status, 422)
  assert.is(named.body.code, 'validation_failed')
  assert.equal(named.body.details.issues, [{ path: 'name', message: 'must not contain the NUL character (U+0000)' }])
  const nested = await t.client.post('/v1/config-objects', {
    token: org.owner.token,
    json: { type: 'custom', sourceMode: 'cloud', title: 'n', input: { normalizedPayload: { 'k\u0000': 1 } } },
  })
  assert.is(nested.status, 422)
  assert.equal(
    nested.body.details.issues.map((i: { path: string }) => i.path),
    ['input.normalizedPayload.k\u0000'],
  )
  const query = await t.client.get('/v1/config-objects?type=skill&connectorInstance=a%00b', { token: org.owner.token })
  assert.is(query.status, 422)
  assert.is(query.body.details.issues[0].path, 'connectorInstance')
  const path = await t.client.get('/v1/config-objects/cob_%00', { token: org.owner.token })
  assert.is(path.status, 404)
  // The escape spelled out (a backslash, then u0000) is ordinary text.
  const spelled = await t.client.post('/v1/orgs', { token: org.owner.token, json: { name: 'a\\u0000b' } })
  assert.is(spelled.status, 201)
  assert.is(spelled.body.item.name, 'a\\u0000b')
  assert.is((await t.app.deps.db.selectFrom('organization').select('id').execute()).length, orgs.length + 1)
})

test('a Worker heartbeat with openSessionCount beyond the integer column is 422; the largest one it holds is stored', async () => {
  const plane = await startAsyncTestPlane({ listen: true })
  try {
    const owner = await buildFixtureOrg(plane.client, 'beat')
    const created = await plane.client.post('/v1/workers', {
      token: owner.owner.token,
      json: { name: 'counted', provisioner: 'process' },
    })
    const id: string = created.body.item.id
    const tokens = (await plane.client.post(`/v1/workers/${id}/tokens`, { token: owner.owner.token })).body.item.tokens
    const beat = (openSessionCount: number) =>
      plane.client.post(`/v1/workers/${id}/heartbeat`, {
        json: { openSessionCount },
        headers: { authorization: `Bearer ${tokens.activity}` },
      })
    for (const count of [INT_COLUMN_MAX + 1, 2 ** 53, -1, 1.5]) {
      const res = await beat(count)
      assert.is(res.status, 422, `openSessionCount ${count}`)
      assert.is(res.body.details.issues[0].path, 'openSessionCount')
    }
    assert.is((await beat(INT_COLUMN_MAX)).status, 200)
    const row = await plane.app.deps.db
      .selectFrom('worker')
      .select('open_session_count')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    assert.is(row.open_session_count, INT_COLUMN_MAX)
  } finally {
    const rows = await plane.app.deps.db
      .selectFrom('worker')
      .select('runtime_pid')
      .execute()
      .catch(() => [])
    await plane.close()
    for (const { runtime_pid: pid } of rows) {
      if (typeof pid !== 'number') continue
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  }
})

test.run()
