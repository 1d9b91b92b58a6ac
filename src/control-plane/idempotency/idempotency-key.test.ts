/**
 * `Idempotency-Key` over the control plane's HTTP pipeline, on both engines: a repeat replays the
 * first answer and runs nothing; another request with the key is 422; a key held by a run in
 * progress is 409 with Retry-After; keys are per caller; they expire; a second instance on the
 * same database replays; errors before any commit free the key; public routes ignore it; the
 * document declares it on every write with a credential.
 */
import { strToU8, zipSync } from 'fflate'
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { sweepExpiredKeys } from './idempotency-store.ts'

const test = suite('control-plane/idempotency-key', { timeoutMs: 60_000 })

async function withObject(fn: (t: TestControlPlane, org: FixtureOrg, objectId: string) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'idem')
    const created = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: { type: 'context', sourceMode: 'cloud', title: 'Log', input: { rawSourceText: 'v1' } },
    })
    assert.is(created.status, 201)
    await fn(t, org, created.body.item.id as string)
  } finally {
    await t.close()
  }
}

const append = (t: TestControlPlane, token: string, objectId: string, text: string, key?: string) =>
  t.client.post(`/v1/config-objects/${objectId}/versions`, {
    token,
    json: { input: { rawSourceText: text } },
    headers: key === undefined ? {} : { 'idempotency-key': key },
  })

async function versionCount(t: TestControlPlane, objectId: string): Promise<number> {
  const rows = await t.app.deps.db
    .selectFrom('config_object_version')
    .select('id')
    .where('config_object_id', '=', objectId)
    .execute()
  return rows.length
}

test('a repeat with the same key and body gets the first answer, marked replayed, and adds nothing', async () => {
  await withObject(async (t, org, id) => {
    const first = await append(t, org.owner.token, id, 'v2', 'key-1')
    assert.is(first.status, 201)
    assert.is(first.headers.get('idempotency-replayed'), null)
    const again = await append(t, org.owner.token, id, 'v2', 'key-1')
    assert.is(again.status, 201)
    assert.is(again.headers.get('idempotency-replayed'), 'true')
    assert.equal(again.body, first.body)
    assert.is(await versionCount(t, id), 2)
    // The quoted form of the draft names the same key.
    const quoted = await append(t, org.owner.token, id, 'v2', '"key-1"')
    assert.equal([quoted.status, quoted.body.item.id], [201, first.body.item.id])
  })
})

test('the same key with another body or another target is 422 idempotency_key_reused and runs nothing', async () => {
  await withObject(async (t, org, id) => {
    assert.is((await append(t, org.owner.token, id, 'v2', 'key-2')).status, 201)
    const otherBody = await append(t, org.owner.token, id, 'v3', 'key-2')
    assert.equal([otherBody.status, otherBody.body.code], [422, 'idempotency_key_reused'])
    const otherTarget = await t.client.post('/v1/teams', {
      token: org.owner.token,
      json: { name: 'v2' },
      headers: { 'idempotency-key': 'key-2' },
    })
    assert.equal([otherTarget.status, otherTarget.body.code], [422, 'idempotency_key_reused'])
    assert.is(await versionCount(t, id), 2)
  })
})

test('a key held by a run in progress is 409 idempotency_key_in_progress with Retry-After; a vanished run is taken over or reported', async () => {
  await withObject(async (t, org, id) => {
    assert.is((await append(t, org.owner.token, id, 'v2', 'key-3')).status, 201)
    // Put the key back in the state of a run still going (on this or another instance).
    const keys = t.app.deps.db.updateTable('idempotency_key').where('key', '=', 'key-3')
    await keys
      .set({ status: null, answer: null, lease_until: new Date(t.clock.now() + 10_000).toISOString() })
      .execute()
    const running = await append(t, org.owner.token, id, 'v2', 'key-3')
    assert.equal([running.status, running.body.code], [409, 'idempotency_key_in_progress'])
    assert.ok(Number(running.headers.get('retry-after')) >= 1)
    // Its instance died after committing, before recording the answer: the work must not run again.
    t.clock.advance(11_000)
    const lost = await append(t, org.owner.token, id, 'v2', 'key-3')
    assert.equal([lost.status, lost.body.code], [409, 'idempotency_answer_lost'])
    // Its instance died before committing anything: this request runs instead.
    await keys.set({ commits: 0 }).execute()
    const takenOver = await append(t, org.owner.token, id, 'v2', 'key-3')
    assert.equal([takenOver.status, takenOver.headers.get('idempotency-replayed')], [201, null])
    assert.is(await versionCount(t, id), 3)
  })
})

test('keys are per caller: another member, or the same person with an API key, runs with the same key', async () => {
  await withObject(async (t, org) => {
    const team = (name: string, credential: { token?: string; apiKey?: string }) =>
      t.client.post('/v1/teams', { ...credential, json: { name }, headers: { 'idempotency-key': 'shared' } })
    assert.is((await team('Alpha', { token: org.owner.token })).status, 201)
    const admin = await team('Beta', { token: org.admin.token })
    assert.equal([admin.status, admin.headers.get('idempotency-replayed')], [201, null])
    assert.is(admin.body.item.name, 'Beta')
    const viaKey = await team('Gamma', { apiKey: org.ownerKey.key })
    assert.equal([viaKey.status, viaKey.body.item.name], [201, 'Gamma'])
    // The owner's session still replays its own answer.
    const replay = await team('Alpha', { token: org.owner.token })
    assert.equal([replay.status, replay.headers.get('idempotency-replayed')], [201, 'true'])
  })
})

test('a key expires after its time to live: the same request then runs again, and the sweep deletes expired rows', async () => {
  await withObject(async (t, org, id) => {
    assert.is((await append(t, org.owner.token, id, 'v2', 'key-4')).status, 201)
    t.clock.advance(24 * 3600_000 + 1_000)
    const again = await append(t, org.owner.token, id, 'v2', 'key-4')
    assert.equal([again.status, again.headers.get('idempotency-replayed')], [201, null])
    assert.is(await versionCount(t, id), 3)
    assert.is((await append(t, org.owner.token, id, 'v3', 'key-5')).status, 201)
    t.clock.advance(24 * 3600_000 + 1_000)
    // The fixture's own writes carried keys too: all expired, swept one row per batch.
    const before = (await t.app.deps.db.selectFrom('idempotency_key').select('key').execute()).length
    assert.ok(before > 2)
    assert.is(await sweepExpiredKeys(t.app.deps, 1, 2), 2)
    assert.is(await sweepExpiredKeys(t.app.deps, 1000, 10), before - 2)
    const left = await t.app.deps.db.selectFrom('idempotency_key').select('key').execute()
    assert.equal(left, [])
  })
})

test("a repeat replays though the first request changed the session's organization (a first organization becomes the active one)", async () => {
  const t = await startTestControlPlane()
  try {
    const person = await t.client.post('/v1/auth/sign-up', {
      json: { email: 'new@orgs.test', password: 'correct horse battery', name: 'New' },
    })
    const token = person.body.session.token as string
    const create = () =>
      t.client.post('/v1/orgs', { token, json: { name: 'First' }, headers: { 'idempotency-key': 'org-1' } })
    const first = await create()
    const again = await create()
    assert.equal([first.status, again.status, again.headers.get('idempotency-replayed')], [201, 201, 'true'])
    assert.is(again.body.item.id, first.body.item.id)
    const other = await t.client.post('/v1/orgs', {
      token,
      orgId: first.body.item.id,
      json: { name: 'First' },
      headers: { 'idempotency-key': 'org-1' },
    })
    assert.equal([other.status, other.body.code], [422, 'idempotency_key_reused'])
  } finally {
    await t.close()
  }
})

test('a second instance on the same database replays the answer the first one recorded', async () => {
  await withObject(async (t, org, id) => {
    const first = await append(t, org.owner.token, id, 'v2', 'key-6')
    assert.is(first.status, 201)
    const second = await startTestControlPlane({ sameDatabaseAs: t })
    try {
      const replay = await second.client.post(`/v1/config-objects/${id}/versions`, {
        token: org.owner.token,
        json: { input: { rawSourceText: 'v2' } },
        headers: { 'idempotency-key': 'key-6' },
      })
      assert.equal([replay.status, replay.headers.get('idempotency-replayed')], [201, 'true'])
      assert.equal(replay.body, first.body)
    } finally {
      await second.close()
    }
    assert.is(await versionCount(t, id), 2)
  })
})

test('an error before anything committed frees the key; the answer is sealed at rest', async () => {
  await withObject(async (t, org, id) => {
    const missing = await append(t, org.owner.token, 'cob_00000000000000000000000000', 'v2', 'key-7')
    assert.is(missing.status, 404)
    const kept = await t.app.deps.db.selectFrom('idempotency_key').select('key').where('key', '=', 'key-7').execute()
    assert.equal(kept, [])
    const created = await t.client.post('/v1/api-keys', {
      token: org.owner.token,
      json: { name: 'ci' },
      headers: { 'idempotency-key': 'key-8' },
    })
    assert.is(created.status, 201)
    const row = await t.app.deps.db
      .selectFrom('idempotency_key')
      .select('answer')
      .where('key', '=', 'key-8')
      .executeTakeFirstOrThrow()
    assert.ok(row.answer !== null && !row.answer.includes(created.body.key as string))
    const replay = await t.client.post('/v1/api-keys', {
      token: org.owner.token,
      json: { name: 'ci' },
      headers: { 'idempotency-key': 'key-8' },
    })
    assert.equal([replay.status, replay.body.key], [201, created.body.key])
    assert.is(await versionCount(t, id), 1)
  })
})

test('a zip upload is fingerprinted by its bytes: the same archive replays, another one is 422', async () => {
  await withObject(async (t, org) => {
    const zip = (description: string) =>
      zipSync({ 'SKILL.md': strToU8(`---\nname: zipped\ndescription: ${description}\n---\n\nBody.\n`) })
    const upload = (bytes: Uint8Array) =>
      t.client.post('/v1/config-objects/import', {
        token: org.owner.token,
        body: bytes,
        headers: { 'content-type': 'application/zip', 'idempotency-key': 'zip-1' },
      })
    const first = await upload(zip('First.'))
    assert.is(first.status, 200)
    const again = await upload(zip('First.'))
    assert.equal([again.status, again.headers.get('idempotency-replayed')], [200, 'true'])
    assert.equal(again.body, first.body)
    const other = await upload(zip('Second.'))
    assert.equal([other.status, other.body.code], [422, 'idempotency_key_reused'])
    const skills = await t.app.deps.db.selectFrom('config_object').select('id').where('name', '=', 'zipped').execute()
    assert.is(skills.length, 1)
  })
})

test('a key that is empty, too long or not printable ASCII is 400 idempotency_key_invalid; 255 characters are fine', async () => {
  await withObject(async (t, org, id) => {
    for (const bad of ['x'.repeat(256), 'clé', '""']) {
      const res = await append(t, org.owner.token, id, 'v2', bad)
      assert.equal([res.status, res.body.code], [400, 'idempotency_key_invalid'], bad)
    }
    assert.is((await append(t, org.owner.token, id, 'v2', 'k'.repeat(255))).status, 201)
  })
})

test('public routes ignore the key: two sign-ins with one key make two sessions', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'public')
    const signIn = () =>
      t.client.post('/v1/auth/sign-in', {
        json: { email: org.owner.email, password: org.owner.password },
        headers: { 'idempotency-key': 'same' },
      })
    const [a, b] = [await signIn(), await signIn()]
    assert.equal([a.status, b.status], [200, 200])
    assert.ok(a.body.session.token !== b.body.session.token)
    assert.is(b.headers.get('idempotency-replayed'), null)
  } finally {
    await t.close()
  }
})

test('the document declares Idempotency-Key with 409 and 422 on every write with a credential, and on no public route', async () => {
  const t = await startTestControlPlane()
  try {
    const doc = t.app.openapi() as { paths: Record<string, Record<string, Record<string, any>>> }
    let writes = 0
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const names = ((operation.parameters ?? []) as Array<{ name: string }>).map((p) => p.name)
        const isPublic = Array.isArray(operation.security) && operation.security.length === 0
        const honoured = method !== 'get' && !isPublic
        assert.is(names.includes('Idempotency-Key'), honoured, `${method} ${path}`)
        if (!honoured) continue
        writes++
        assert.ok(operation.responses['409'] && operation.responses['422'], `${method} ${path}`)
      }
    }
    assert.ok(writes > 40, String(writes))
  } finally {
    await t.close()
  }
})

test.run()
