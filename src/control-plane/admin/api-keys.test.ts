import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/api-keys')

test('a key is shown once at creation, then only its start appears; it authenticates as its member', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'k')
    const created = await t.client.post('/v1/api-keys', { token: org.admin.token, json: { name: 'ci deploy' } })
    assert.is(created.status, 201)
    const key: string = created.body.key
    assert.match(key, /^svc_[A-Za-z0-9_-]{40,}$/)
    assert.ok(key.startsWith(created.body.item.start))
    assert.is(created.body.item.role, 'admin')
    assert.is(created.body.item.memberId, org.admin.memberId)
    const list = await t.client.get('/v1/api-keys', { token: org.owner.token })
    assert.not.ok(JSON.stringify(list.body).includes(key))
    assert.ok(list.body.items.some((k: { id: string }) => k.id === created.body.item.id))
    const me = await t.client.get('/v1/me', { apiKey: key })
    assert.is(me.body.user.id, org.admin.userId)
    assert.is(me.body.member.role, 'admin')
    assert.not.ok(me.body.member.permissions.includes('api_keys.manage'), 'keys cannot mint keys')
    const after = await t.client.get('/v1/api-keys', { token: org.owner.token })
    const used = after.body.items.find((k: { id: string }) => k.id === created.body.item.id)
    assert.is(used.lastUsedAt, new Date(t.clock.now()).toISOString())
  } finally {
    await t.close()
  }
})

test('a key with an expiry stops working when it passes; an expiry in the past is refused', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'exp')
    const past = await t.client.post('/v1/api-keys', {
      token: org.owner.token,
      json: { name: 'old', expiresAt: new Date(t.clock.now() - 1000).toISOString() },
    })
    assert.is(past.status, 422)
    assert.is(past.body.details.issues[0].path, 'expiresAt')
    const created = await t.client.post('/v1/api-keys', {
      token: org.owner.token,
      json: { name: 'short', expiresAt: new Date(t.clock.now() + 3600_000).toISOString() },
    })
    assert.is((await t.client.get('/v1/org', { apiKey: created.body.key })).status, 200)
    t.clock.advance(3600_001)
    const expired = await t.client.get('/v1/org', { apiKey: created.body.key })
    assert.is(expired.status, 401)
    assert.match(expired.body.message, /expired/)
    const list = await t.client.get('/v1/api-keys', { token: org.owner.token })
    assert.is(list.body.items.find((k: { id: string }) => k.id === created.body.item.id).status, 'expired')
  } finally {
    await t.close()
  }
})

test("a member's keys are disabled when their role changes or they are removed, and the audit says so", async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'rev')
    const memberKey = await t.client.post('/v1/api-keys', { token: org.member.token, json: { name: 'member key' } })
    assert.is(memberKey.status, 403, 'members cannot create keys')
    assert.is((await t.client.get('/v1/members', { apiKey: org.adminKey.key })).status, 200)
    const same = await t.client.patch(`/v1/members/${org.admin.memberId}`, {
      token: org.owner.token,
      json: { role: 'admin' },
    })
    assert.is(same.status, 200)
    assert.is((await t.client.get('/v1/members', { apiKey: org.adminKey.key })).status, 200, 'no change, no revocation')
    const demoted = await t.client.patch(`/v1/members/${org.admin.memberId}`, {
      token: org.owner.token,
      json: { role: 'member' },
    })
    assert.is(demoted.body.item.role, 'member')
    const refused = await t.client.get('/v1/members', { apiKey: org.adminKey.key })
    assert.is(refused.status, 401)
    assert.match(refused.body.message, /disabled/)
    const keys = await t.client.get('/v1/api-keys', { token: org.owner.token })
    const adminKey = keys.body.items.find((k: { id: string }) => k.id === org.adminKey.id)
    assert.equal([adminKey.status, adminKey.disabledReason], ['disabled', 'role_changed'])
    const audit = await t.client.get('/v1/audit-events?action=api_key.disabled', { token: org.owner.token })
    assert.equal(
      audit.body.items.map((e: { target: { id: string }; data: unknown }) => [e.target.id, e.data]),
      [[org.adminKey.id, { reason: 'role_changed' }]],
    )
    const roleEvent = await t.client.get('/v1/audit-events?action=member.role_changed', { token: org.owner.token })
    assert.equal(roleEvent.body.items[0].data, { from: 'admin', to: 'member' })
    assert.is(roleEvent.body.items[0].actor.memberId, org.owner.memberId)

    // Promote back, give them a new key, then remove them: the new key dies with the membership.
    await t.client.patch(`/v1/members/${org.admin.memberId}`, { token: org.owner.token, json: { role: 'admin' } })
    const fresh = await t.client.post('/v1/api-keys', { token: org.admin.token, json: { name: 'second' } })
    assert.is((await t.client.get('/v1/org', { apiKey: fresh.body.key })).status, 200)
    assert.is((await t.client.delete(`/v1/members/${org.admin.memberId}`, { token: org.owner.token })).status, 204)
    assert.is((await t.client.get('/v1/org', { apiKey: fresh.body.key })).status, 401)
    const removedKey = (await t.client.get('/v1/api-keys', { token: org.owner.token })).body.items.find(
      (k: { id: string }) => k.id === fresh.body.item.id,
    )
    assert.is(removedKey.disabledReason, 'member_removed')
    const noOrg = await t.client.get('/v1/org', { token: org.admin.token })
    assert.is(noOrg.status, 403)
    assert.is(noOrg.body.code, 'no_organization')
  } finally {
    await t.close()
  }
})

test('revoking a key ends it at once; revoking again is 404', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'del')
    assert.is((await t.client.delete(`/v1/api-keys/${org.ownerKey.id}`, { token: org.admin.token })).status, 204)
    assert.is((await t.client.get('/v1/org', { apiKey: org.ownerKey.key })).status, 401)
    const again = await t.client.delete(`/v1/api-keys/${org.ownerKey.id}`, { token: org.admin.token })
    assert.is(again.status, 404)
    assert.is(again.body.code, 'api_key_not_found')
    const audit = await t.client.get('/v1/audit-events?action=api_key.revoked', { token: org.owner.token })
    assert.is(audit.body.items[0].actor.memberId, org.admin.memberId)
  } finally {
    await t.close()
  }
})

test('a session sent both as bearer and as x-api-key (a generated client) is accepted; a valid key in x-api-key wins; a key as bearer is still refused', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'both')
    const both = await t.client.get('/v1/me', { token: org.member.token, apiKey: org.member.token })
    assert.is(both.status, 200)
    assert.is(both.body.user.id, org.member.userId)
    const stale = await t.client.get('/v1/me', { token: org.member.token, apiKey: 'svc_not-a-real-key' })
    assert.is(stale.status, 200, 'an invalid key beside a valid session falls back to the session')
    assert.is(stale.body.user.id, org.member.userId)
    const keyWins = await t.client.get('/v1/me', { token: org.member.token, apiKey: org.adminKey.key })
    assert.is(keyWins.body.user.id, org.admin.userId, 'a valid key is the credential')
    const badSession = await t.client.get('/v1/me', { token: 'sst_nope', apiKey: 'sst_nope' })
    assert.is(badSession.status, 401)
    const keyAsBearer = await t.client.get('/v1/me', { token: org.adminKey.key, apiKey: org.adminKey.key })
    assert.is(keyAsBearer.status, 401)
    assert.match(keyAsBearer.body.message, /x-api-key/)
    const keyAlone = await t.client.get('/v1/me', { token: org.adminKey.key })
    assert.is(keyAlone.status, 401)
  } finally {
    await t.close()
  }
})

test.run()
