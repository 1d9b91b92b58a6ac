import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg, signUpPerson } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/invitations-and-teams')

const DAY = 24 * 3600_000

test('an invitation is pending, then accepted by the invited email with a session, and joins with its role', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'inv')
    const invite = await t.client.post('/v1/invitations', {
      token: org.admin.token,
      json: { email: 'Joiner@Inv.test', role: 'admin' },
    })
    assert.is(invite.status, 201)
    assert.match(invite.body.token, /^svi_/)
    assert.equal(
      [invite.body.item.email, invite.body.item.status, invite.body.item.role],
      ['joiner@inv.test', 'pending', 'admin'],
    )
    assert.is(Date.parse(invite.body.item.expiresAt) - t.clock.now(), 7 * DAY)
    const stranger = await signUpPerson(t.client, 'stranger@inv.test')
    const mismatch = await t.client.post('/v1/invitations/accept', {
      token: stranger.token,
      json: { token: invite.body.token },
    })
    assert.is(mismatch.status, 403)
    assert.is(mismatch.body.code, 'invitation_email_mismatch')
    assert.is(
      (await t.client.post('/v1/invitations/accept', { token: stranger.token, json: { token: 'svi_unknown' } })).status,
      404,
    )
    const joiner = await signUpPerson(t.client, 'joiner@inv.test')
    const accepted = await t.client.post('/v1/invitations/accept', {
      token: joiner.token,
      json: { token: invite.body.token },
    })
    assert.is(accepted.status, 200)
    assert.equal([accepted.body.item.organization.id, accepted.body.item.role], [org.orgId, 'admin'])
    const me = await t.client.get('/v1/me', { token: joiner.token })
    assert.is(me.body.organization.id, org.orgId, 'the joined organization becomes active')
    const again = await t.client.post('/v1/invitations/accept', {
      token: joiner.token,
      json: { token: invite.body.token },
    })
    assert.is(again.status, 409)
    assert.is(again.body.code, 'invitation_not_pending')
    const read = await t.client.get(`/v1/invitations/${invite.body.item.id}`, { token: org.owner.token })
    assert.equal([read.body.item.status, read.body.item.acceptedByUserId], ['accepted', joiner.userId])
    const dup = await t.client.post('/v1/invitations', { token: org.owner.token, json: { email: 'joiner@inv.test' } })
    assert.is(dup.status, 409)
    assert.is(dup.body.code, 'member_exists')
  } finally {
    await t.close()
  }
})

test('invitations expire after 7 days, can be canceled only while pending, and a re-invite replaces the old token', async () => {
  const t = await startTestControlPlane({ sessionTtlHours: 24 * 30 })
  try {
    const org = await buildFixtureOrg(t.client, 'life')
    const first = await t.client.post('/v1/invitations', { token: org.owner.token, json: { email: 'late@life.test' } })
    const second = await t.client.post('/v1/invitations', { token: org.owner.token, json: { email: 'late@life.test' } })
    assert.is(
      (await t.client.get(`/v1/invitations/${first.body.item.id}`, { token: org.owner.token })).body.item.status,
      'canceled',
    )
    const cancelAgain = await t.client.post(`/v1/invitations/${first.body.item.id}/cancel`, { token: org.owner.token })
    assert.is(cancelAgain.status, 409)
    const other = await t.client.post('/v1/invitations', { token: org.owner.token, json: { email: 'gone@life.test' } })
    const canceled = await t.client.post(`/v1/invitations/${other.body.item.id}/cancel`, { token: org.admin.token })
    assert.is(canceled.body.item.status, 'canceled')
    t.clock.advance(7 * DAY + 1)
    const expired = await t.client.get('/v1/invitations?status=expired', { token: org.owner.token })
    assert.equal(
      expired.body.items.map((i: { id: string }) => i.id),
      [second.body.item.id],
    )
    assert.equal((await t.client.get('/v1/invitations?status=pending', { token: org.owner.token })).body.items, [])
    const late = await signUpPerson(t.client, 'late@life.test')
    const tooLate = await t.client.post('/v1/invitations/accept', {
      token: late.token,
      json: { token: second.body.token },
    })
    assert.is(tooLate.status, 409)
    assert.is(tooLate.body.details.status, 'expired')
    assert.is(
      (await t.client.post(`/v1/invitations/${second.body.item.id}/cancel`, { token: org.owner.token })).status,
      409,
    )
    const all = await t.client.get('/v1/invitations', { token: org.owner.token })
    const states = Object.fromEntries(all.body.items.map((i: { id: string; status: string }) => [i.id, i.status]))
    assert.is(states[first.body.item.id], 'canceled')
    assert.is(states[second.body.item.id], 'expired')
  } finally {
    await t.close()
  }
})

test('teams: names are unique per organization, membership is managed, counts follow', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'teams')
    const created = await t.client.post('/v1/teams', {
      token: org.admin.token,
      json: { name: 'Platform', memberIds: [org.member.memberId, org.member.memberId] },
    })
    assert.is(created.status, 201)
    assert.match(created.body.item.id, /^team_/)
    assert.is(created.body.item.memberCount, 1)
    const teamId = created.body.item.id
    const dup = await t.client.post('/v1/teams', { token: org.admin.token, json: { name: 'Platform' } })
    assert.is(dup.status, 409)
    assert.is(dup.body.code, 'team_exists')
    const added = await t.client.post(`/v1/teams/${teamId}/members`, {
      token: org.admin.token,
      json: { memberId: org.admin.memberId },
    })
    assert.is(added.status, 201)
    assert.is(added.body.item.id, org.admin.memberId)
    assert.is(
      (
        await t.client.post(`/v1/teams/${teamId}/members`, {
          token: org.admin.token,
          json: { memberId: org.admin.memberId },
        })
      ).status,
      409,
    )
    const members = await t.client.get(`/v1/teams/${teamId}/members`, { token: org.member.token })
    assert.equal(
      members.body.items.map((m: { id: string }) => m.id),
      [org.admin.memberId, org.member.memberId],
    )
    const other = await t.client.post('/v1/teams', { token: org.admin.token, json: { name: 'Other' } })
    assert.is(
      (await t.client.patch(`/v1/teams/${other.body.item.id}`, { token: org.admin.token, json: { name: 'Platform' } }))
        .status,
      409,
    )
    const patched = await t.client.patch(`/v1/teams/${teamId}`, {
      token: org.admin.token,
      json: { description: 'Runs the platform' },
    })
    assert.equal(
      [patched.body.item.name, patched.body.item.description, patched.body.item.memberCount],
      ['Platform', 'Runs the platform', 2],
    )
    assert.is(
      (await t.client.delete(`/v1/teams/${teamId}/members/${org.member.memberId}`, { token: org.admin.token })).status,
      204,
    )
    assert.is(
      (await t.client.delete(`/v1/teams/${teamId}/members/${org.member.memberId}`, { token: org.admin.token })).status,
      404,
    )
    assert.is((await t.client.get(`/v1/teams/${teamId}`, { token: org.member.token })).body.item.memberCount, 1)
    assert.is((await t.client.delete(`/v1/teams/${teamId}`, { token: org.owner.token })).status, 204)
    assert.is((await t.client.get(`/v1/teams/${teamId}`, { token: org.owner.token })).status, 404)
    assert.is(
      (await t.client.get(`/v1/members/${org.admin.memberId}`, { token: org.owner.token })).status,
      200,
      'members stay',
    )
  } finally {
    await t.close()
  }
})

test('concurrent creates of one team name end as one 201 and the rest 409', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'race')
    const results = await Promise.all(
      Array.from({ length: 4 }, () => t.client.post('/v1/teams', { token: org.admin.token, json: { name: 'Same' } })),
    )
    assert.equal(results.map((r) => r.status).sort(), [201, 409, 409, 409])
  } finally {
    await t.close()
  }
})

test('removing a member takes them out of their teams', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'rm')
    const team = await t.client.post('/v1/teams', {
      token: org.owner.token,
      json: { name: 'Crew', memberIds: [org.member.memberId, org.admin.memberId] },
    })
    assert.is((await t.client.delete(`/v1/members/${org.member.memberId}`, { token: org.admin.token })).status, 204)
    const members = await t.client.get(`/v1/teams/${team.body.item.id}/members`, { token: org.owner.token })
    assert.equal(
      members.body.items.map((m: { id: string }) => m.id),
      [org.admin.memberId],
    )
    assert.is((await t.client.get(`/v1/members/${org.member.memberId}`, { token: org.owner.token })).status, 404)
  } finally {
    await t.close()
  }
})

test.run()
