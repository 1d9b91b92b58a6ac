import { assert, suite } from '../../../tests/harness.ts'
import { listMembers } from './members.ts'
import { buildFixtureOrg, signUpPerson } from '../testing/org-fixture.ts'
import { seedMembers } from '../testing/seed.ts'
import { queryPlan } from '../testing/query-plan.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/members-and-orgs')

test('members page by cursor: every member exactly once, in joining order, with bounded limits', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'page')
    const seeded = await seedMembers(t.app.deps.db, org.orgId, 120)
    const expected = [org.owner.memberId, org.admin.memberId, org.member.memberId, ...seeded]
    const seen: string[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const res = await t.client.get(`/v1/members?limit=50${cursor ? `&cursor=${cursor}` : ''}`, {
        token: org.member.token,
      })
      assert.is(res.status, 200)
      seen.push(...res.body.items.map((m: { id: string }) => m.id))
      cursor = res.body.nextCursor
      pages++
    } while (cursor)
    assert.is(pages, 3)
    assert.equal(seen, expected)
    const admins = await t.client.get('/v1/members?role=admin', { token: org.owner.token })
    assert.equal(
      admins.body.items.map((m: { id: string }) => m.id),
      [org.admin.memberId],
    )
    for (const bad of ['0', '101', 'ten', '1.5']) {
      const res = await t.client.get(`/v1/members?limit=${bad}`, { token: org.owner.token })
      assert.is(res.status, 422, `limit=${bad}`)
      assert.is(res.body.details.issues[0].path, 'limit')
    }
  } finally {
    await t.close()
  }
})

test('the members page is answered from the (org_id, id) index, not by scanning or sorting the table', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'plan')
    const page = await listMembers(t.app.deps, org.orgId, { limit: 50 })
    const query = t.app.deps.db
      .selectFrom('member as m')
      .innerJoin('app_user as u', 'u.id', 'm.user_id')
      .select(['m.id'])
      .where('m.org_id', '=', org.orgId)
      .where('m.id', '>', page.items[0]!.id)
      .orderBy('m.id')
      .limit(51)
      .compile()
    const plan = await queryPlan(t.app.deps.db, query)
    assert.match(plan.text, /member_org_id_idx/)
    assert.not.ok(plan.sorts, plan.text)
  } finally {
    await t.close()
  }
})

test('a cursor that is malformed or from another list is 400; an empty page is 200 with no items', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'cur')
    for (const cursor of ['garbage!', 'eyJub3QiOiJvdXJzIn0', 'bm90IGpzb24']) {
      const res = await t.client.get(`/v1/members?cursor=${cursor}`, { token: org.owner.token })
      assert.is(res.status, 400, cursor)
      assert.is(res.body.code, 'invalid_cursor')
    }
    const teamsPage = await t.client.get('/v1/audit-events?limit=1', { token: org.owner.token })
    const crossList = await t.client.get(`/v1/members?cursor=${teamsPage.body.nextCursor}`, { token: org.owner.token })
    assert.is(crossList.status, 400)
    const empty = await t.client.get('/v1/teams', { token: org.member.token })
    assert.equal(empty.body, { items: [], nextCursor: null })
  } finally {
    await t.close()
  }
})

test("the owner's role cannot be changed and the owner cannot be removed; only owners change roles", async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'own')
    const change = await t.client.patch(`/v1/members/${org.owner.memberId}`, {
      token: org.owner.token,
      json: { role: 'member' },
    })
    assert.is(change.status, 409)
    assert.is(change.body.code, 'owner_protected')
    assert.is((await t.client.delete(`/v1/members/${org.owner.memberId}`, { token: org.admin.token })).status, 409)
    assert.is(
      (await t.client.patch(`/v1/members/${org.member.memberId}`, { token: org.admin.token, json: { role: 'admin' } }))
        .status,
      403,
    )
    const toOwner = await t.client.patch(`/v1/members/${org.member.memberId}`, {
      token: org.owner.token,
      json: { role: 'owner' },
    })
    assert.is(toOwner.status, 422)
    const me = await t.client.get('/v1/me', { token: org.owner.token })
    assert.is(me.body.member.role, 'owner')
  } finally {
    await t.close()
  }
})

test('the owner can hand ownership to a member: roles swap, both keys are disabled, and only one owner remains', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'xfer')
    assert.is(
      (await t.client.post(`/v1/members/${org.member.memberId}/transfer-ownership`, { token: org.admin.token })).status,
      403,
    )
    assert.is(
      (await t.client.post(`/v1/members/${org.owner.memberId}/transfer-ownership`, { token: org.owner.token })).body
        .code,
      'already_owner',
    )
    const moved = await t.client.post(`/v1/members/${org.admin.memberId}/transfer-ownership`, {
      token: org.owner.token,
    })
    assert.is(moved.status, 200)
    assert.is(moved.body.item.role, 'owner')
    const owners = await t.client.get('/v1/members?role=owner', { token: org.member.token })
    assert.equal(
      owners.body.items.map((m: { id: string }) => m.id),
      [org.admin.memberId],
    )
    assert.is(
      (await t.client.get(`/v1/members/${org.owner.memberId}`, { token: org.member.token })).body.item.role,
      'admin',
    )
    assert.is((await t.client.get('/v1/org', { apiKey: org.ownerKey.key })).status, 401)
    assert.is((await t.client.get('/v1/org', { apiKey: org.adminKey.key })).status, 401)
    const demote = await t.client.patch(`/v1/members/${org.owner.memberId}`, {
      token: org.admin.token,
      json: { role: 'member' },
    })
    assert.is(demote.body.item.role, 'member', 'the new owner holds owner permissions at once')
    const audit = await t.client.get('/v1/audit-events?action=member.ownership_transferred', { token: org.admin.token })
    assert.equal(audit.body.items[0].data, { from: 'admin', previousOwnerMemberId: org.owner.memberId })
  } finally {
    await t.close()
  }
})

test('create bodies that do not validate name the field and what it expects, with the stable code', async () => {
  const t = await startTestControlPlane()
  try {
    const person = await signUpPerson(t.client, 'bodies@x.test')
    const missing = await t.client.post('/v1/orgs', { token: person.token, json: {} })
    assert.equal([missing.status, missing.body.code], [422, 'validation_failed'])
    assert.is(missing.body.message, 'Invalid request body at name: required, expected string')
    assert.equal(missing.body.details.issues, [{ path: 'name', message: 'required, expected string' }])
    const extra = await t.client.post('/v1/orgs', { token: person.token, json: { name: 'Acme', colour: 'red' } })
    assert.equal(extra.body.details.issues, [{ path: 'colour', message: 'unknown field, expected one of: name' }])
    await t.client.post('/v1/orgs', { token: person.token, json: { name: 'Acme' } })
    const key = await t.client.post('/v1/api-keys', { token: person.token, json: { name: 7, expiresAt: 'soon' } })
    assert.equal([key.status, key.body.code], [422, 'validation_failed'])
    assert.equal(key.body.details.issues, [
      { path: 'name', message: 'expected string, received 7' },
      { path: 'expiresAt', message: 'must be an ISO-8601 timestamp like 2030-01-01T00:00:00.000Z' },
    ])
  } finally {
    await t.close()
  }
})

test('the organization is chosen by X-Service-Org-Id, else the active organization, which the caller can switch', async () => {
  const t = await startTestControlPlane()
  try {
    const person = await signUpPerson(t.client, 'multi@x.test')
    const none = await t.client.get('/v1/me', { token: person.token })
    assert.equal([none.body.organization, none.body.member], [null, null])
    assert.is((await t.client.get('/v1/org', { token: person.token })).body.code, 'no_organization')
    const first = (await t.client.post('/v1/orgs', { token: person.token, json: { name: 'First' } })).body.item
    const second = (await t.client.post('/v1/orgs', { token: person.token, json: { name: 'Second' } })).body.item
    assert.is(
      (await t.client.get('/v1/org', { token: person.token })).body.item.id,
      second.id,
      'a new org becomes active',
    )
    assert.is((await t.client.get('/v1/org', { token: person.token, orgId: first.id })).body.item.id, first.id)
    const switched = await t.client.post('/v1/me/active-org', {
      token: person.token,
      json: { organizationId: first.id },
    })
    assert.equal(switched.body.item, {
      id: first.id,
      name: 'First',
      memberId: switched.body.item.memberId,
      role: 'owner',
      isActive: true,
    })
    assert.is((await t.client.get('/v1/org', { token: person.token })).body.item.id, first.id)
    const orgs = await t.client.get('/v1/me/orgs', { token: person.token })
    assert.equal(
      orgs.body.items.map((o: { name: string; isActive: boolean }) => [o.name, o.isActive]),
      [
        ['First', true],
        ['Second', false],
      ],
    )
    const stranger = await signUpPerson(t.client, 'stranger@x.test')
    assert.is((await t.client.get('/v1/org', { token: stranger.token, orgId: first.id })).status, 404)
    assert.is((await t.client.get('/v1/org', { token: person.token, orgId: 'org_nonsense' })).status, 404)
    assert.is(
      (await t.client.post('/v1/me/active-org', { token: stranger.token, json: { organizationId: first.id } })).status,
      404,
    )
    const renamed = await t.client.patch('/v1/org', { token: person.token, json: { name: '  First Renamed ' } })
    assert.is(renamed.body.item.name, 'First Renamed')
    assert.is((await t.client.patch('/v1/org', { token: person.token, json: {} })).status, 422)
  } finally {
    await t.close()
  }
})

test('GET /v1/roles publishes the policy table', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'roles')
    const roles = await t.client.get('/v1/roles', { token: org.member.token })
    const byId = Object.fromEntries(roles.body.items.map((r: { id: string }) => [r.id, r]))
    assert.equal(Object.keys(byId), ['owner', 'admin', 'member'])
    assert.ok(byId.owner.permissions.includes('members.update_role'))
    assert.not.ok(byId.admin.permissions.includes('members.update_role'))
    assert.not.ok(byId.owner.apiKeyPermissions.includes('api_keys.manage'))
    assert.equal([byId.owner.assignable, byId.admin.assignable], [false, true])
  } finally {
    await t.close()
  }
})

test('audit events record who did what to which id, newest first, and never secrets or bodies', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'aud')
    const team = await t.client.post('/v1/teams', {
      token: org.admin.token,
      json: { name: 'Secretive team name', description: 'do not log me' },
    })
    const invite = await t.client.post('/v1/invitations', { token: org.admin.token, json: { email: 'quiet@aud.test' } })
    const events = await t.client.get('/v1/audit-events?limit=100', { apiKey: org.ownerKey.key })
    const actions = events.body.items.map((e: { action: string }) => e.action)
    assert.equal(actions.slice(0, 2), ['invitation.created', 'team.created'])
    assert.ok(actions.includes('organization.created'))
    assert.ok(actions.includes('api_key.created'))
    assert.is(events.body.items[1].target.id, team.body.item.id)
    assert.is(events.body.items[1].actor.memberId, org.admin.memberId)
    const text = JSON.stringify(events.body)
    for (const secret of [
      invite.body.token,
      org.ownerKey.key,
      org.adminKey.key,
      org.owner.token,
      'Secretive team name',
      'do not log me',
      'quiet@aud.test',
      org.owner.password,
    ]) {
      assert.not.ok(text.includes(secret), `audit contains ${secret.slice(0, 8)}`)
    }
  } finally {
    await t.close()
  }
})

test.run()
