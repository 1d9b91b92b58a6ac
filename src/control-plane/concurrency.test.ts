/**
 * Read-then-write transactions under concurrency, one test per class: on SQLite transactions never
 * overlap, on PostgreSQL a pool runs them side by side (SERIALIZABLE, retried on conflict), and
 * each invariant must hold on both: a single owner, names unique where the code checks them, one
 * membership per accepted invitation, one grant per principal, gapless version numbers.
 */
import { assert, suite } from '../../tests/harness.ts'
import { buildFixtureOrg, signUpPerson } from './testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from './testing/test-control-plane.ts'

const test = suite('control-plane/concurrency', { timeoutMs: 90_000 })

async function withPlane(fn: (t: TestControlPlane) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t)
  } finally {
    await t.close()
  }
}

test('concurrent ownership transfers to different members leave exactly one owner', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'owners')
    const results = await Promise.all(
      [org.admin.memberId, org.member.memberId].map((memberId) =>
        t.client.post(`/v1/members/${memberId}/transfer-ownership`, { token: org.owner.token }),
      ),
    )
    const statuses = results.map((r) => r.status)
    assert.ok(statuses.includes(200) || statuses.includes(201) || statuses.includes(204), statuses.join(','))
    const members = await t.app.deps.db
      .selectFrom('member')
      .select(['id', 'role'])
      .where('org_id', '=', org.orgId)
      .execute()
    assert.is(members.filter((m) => m.role === 'owner').length, 1, JSON.stringify(members))
  })
})

test('concurrent teams with one name: one is created, every other request is 409 team_exists', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'teams')
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.client.post('/v1/teams', { token: org.owner.token, json: { name: 'Platform' } }),
      ),
    )
    assert.is(results.filter((r) => r.status === 201).length, 1, results.map((r) => r.status).join(','))
    for (const r of results.filter((r) => r.status !== 201)) assert.is(r.body.code, 'team_exists')
    const teams = await t.client.get('/v1/teams?limit=100', { token: org.owner.token })
    assert.is(teams.body.items.filter((team: { name: string }) => team.name === 'Platform').length, 1)
  })
})

test('one invitation accepted by concurrent requests makes exactly one membership', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'invites')
    const invite = await t.client.post('/v1/invitations', {
      token: org.owner.token,
      json: { email: 'late@invites.test', role: 'member' },
    })
    assert.is(invite.status, 201)
    const person = await signUpPerson(t.client, 'late@invites.test')
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.client.post('/v1/invitations/accept', { token: person.token, json: { token: invite.body.token } }),
      ),
    )
    assert.ok(
      results.some((r) => r.status < 300),
      results.map((r) => `${r.status} ${r.body?.code ?? ''}`).join(','),
    )
    const memberships = await t.app.deps.db
      .selectFrom('member')
      .select('id')
      .where('org_id', '=', org.orgId)
      .where('user_id', '=', person.userId)
      .execute()
    assert.is(memberships.length, 1)
  })
})

test('concurrent grants of one object to one member end as one grant with one of the requested roles', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'grants')
    const created = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: { type: 'context', sourceMode: 'cloud', title: 'Shared', input: { rawSourceText: 'text' } },
    })
    assert.is(created.status, 201)
    const id = created.body.item.id as string
    const roles = ['viewer', 'editor', 'viewer', 'editor', 'manager', 'viewer']
    const results = await Promise.all(
      roles.map((role) =>
        t.client.post(`/v1/config-objects/${id}/access`, {
          token: org.owner.token,
          json: { memberId: org.member.memberId, role },
        }),
      ),
    )
    for (const r of results) assert.ok(r.status === 200 || r.status === 201, `${r.status} ${JSON.stringify(r.body)}`)
    const grants = await t.app.deps.db
      .selectFrom('access_grant')
      .select(['role'])
      .where('resource_id', '=', id)
      .where('member_id', '=', org.member.memberId)
      .execute()
    assert.is(grants.length, 1)
    assert.ok(roles.includes(grants[0]!.role))
  })
})

test('concurrent appends without a base version get consecutive numbers and lose none', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'appends')
    const created = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: { type: 'context', sourceMode: 'cloud', title: 'Log', input: { rawSourceText: 'v1' } },
    })
    const id = created.body.item.id as string
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.client.post(`/v1/config-objects/${id}/versions`, {
          token: org.owner.token,
          json: { input: { rawSourceText: `v${i + 2}` } },
        }),
      ),
    )
    // Without a base, an append never conflicts with another: each must land, in some order.
    assert.equal(
      results.map((r) => r.status),
      Array(12).fill(201),
    )
    const history = await t.client.get(`/v1/config-objects/${id}/versions?limit=100`, { token: org.owner.token })
    const numbers = (history.body.items as Array<{ number: number }>).map((v) => v.number).sort((a, b) => a - b)
    assert.equal(
      numbers,
      Array.from({ length: 13 }, (_, i) => i + 1),
    )
  })
})

test('8 writers appending without a base never get version_conflict: each append lands or is 409 write_conflict with Retry-After', async () => {
  await withPlane(async (t) => {
    const org = await buildFixtureOrg(t.client, 'contention')
    const created = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: { type: 'context', sourceMode: 'cloud', title: 'Hot', input: { rawSourceText: 'v0' } },
    })
    assert.is(created.status, 201)
    const id = created.body.item.id as string
    const answers: Array<{ status: number; code?: string; retryAfter: string | null }> = []
    await Promise.all(
      Array.from({ length: 8 }, async (_, writer) => {
        for (let i = 0; i < 12; i++) {
          const r = await t.client.post(`/v1/config-objects/${id}/versions`, {
            token: org.owner.token,
            json: { input: { rawSourceText: `w${writer}-${i}` } },
          })
          answers.push({ status: r.status, code: r.body?.code, retryAfter: r.headers.get('retry-after') })
        }
      }),
    )
    const refused = answers.filter((a) => a.status !== 201)
    for (const a of refused) assert.equal([a.status, a.code, a.retryAfter], [409, 'write_conflict', '1'])
    const stored = await t.app.deps.db
      .selectFrom('config_object_version')
      .select('number')
      .where('config_object_id', '=', id)
      .orderBy('number')
      .execute()
    assert.equal(
      stored.map((v) => v.number),
      Array.from({ length: 1 + answers.length - refused.length }, (_, i) => i + 1),
    )
  })
})

test.run()
