import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { GROUP_SCHEMA, ownerScimToken, patchOp, scimClient, USER_SCHEMA } from './scim-test-kit.ts'

const test = suite('control-plane/scim-groups', { timeoutMs: 60_000 })

test("Groups are teams: Entra's PATCH adds and removes members, renames, and the team follows", async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'grp')
    const scim = scimClient(t, await ownerScimToken(t, org, 'Entra'))
    const ids: string[] = []
    for (const name of ['ann', 'bob', 'cy'])
      ids.push((await scim.post('/Users', { schemas: [USER_SCHEMA], userName: `${name}@grp.test` })).body.id)
    const probe = await scim.get(
      `/Groups?filter=${encodeURIComponent('displayName eq "Engineering"')}&excludedAttributes=members`,
    )
    assert.is(probe.body.totalResults, 0)
    const created = await scim.post('/Groups', {
      schemas: [GROUP_SCHEMA],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'Engineering',
      members: [],
    })
    assert.is(created.status, 201)
    const id = created.body.id
    assert.equal(created.body.members, [])
    const team = await t.client.get(`/v1/teams/${id}`, { token: org.owner.token })
    assert.is(team.body.item.name, 'Engineering')

    // Entra adds members with a value list, and removes them with the value list too.
    const added = await scim.patch(
      `/Groups/${id}`,
      patchOp({ op: 'Add', path: 'members', value: [{ value: ids[0] }, { value: ids[1] }, { value: ids[2] }] }),
    )
    assert.is(added.status, 200)
    assert.equal(added.body.members.map((m: { value: string }) => m.value).sort(), [...ids].sort())
    assert.is(added.body.members.find((m: { value: string }) => m.value === ids[0]).display, 'ann@grp.test')
    assert.is((await t.client.get(`/v1/teams/${id}`, { token: org.owner.token })).body.item.memberCount, 3)
    const removed = await scim.patch(
      `/Groups/${id}`,
      patchOp({ op: 'Remove', path: 'members', value: [{ value: ids[1] }] }),
    )
    assert.equal(removed.body.members.map((m: { value: string }) => m.value).sort(), [ids[0], ids[2]].sort())
    // RFC 7644 §3.5.2.2's filtered path.
    const filtered = await scim.patch(`/Groups/${id}`, patchOp({ op: 'remove', path: `members[value eq "${ids[2]}"]` }))
    assert.equal(
      filtered.body.members.map((m: { value: string }) => m.value),
      [ids[0]],
    )
    // Rename in both forms.
    const renamed = await scim.patch(`/Groups/${id}`, patchOp({ op: 'Replace', path: 'displayName', value: 'Eng' }))
    assert.is(renamed.body.displayName, 'Eng')
    const valueForm = await scim.patch(
      `/Groups/${id}`,
      patchOp({ op: 'replace', value: { id, displayName: 'Engineering 2' } }),
    )
    assert.is(valueForm.body.displayName, 'Engineering 2')
    assert.is((await t.client.get(`/v1/teams/${id}`, { token: org.owner.token })).body.item.name, 'Engineering 2')
    const byExternal = await scim.get(
      `/Groups?filter=${encodeURIComponent('externalId eq "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159"')}`,
    )
    assert.is(byExternal.body.Resources[0].id, id)
    const lean = await scim.get(`/Groups/${id}?excludedAttributes=members`)
    assert.is(lean.body.members, undefined)

    // A deactivated User leaves every team with its membership.
    await scim.patch(`/Users/${ids[0]}`, patchOp({ op: 'Replace', path: 'active', value: 'False' }))
    assert.equal((await scim.get(`/Groups/${id}`)).body.members, [])

    const taken = await scim.post('/Groups', { displayName: 'Engineering 2' })
    assert.is(taken.status, 409)
    assert.is(taken.body.scimType, 'uniqueness')
    const unknown = await scim.patch(
      `/Groups/${id}`,
      patchOp({ op: 'add', path: 'members', value: [{ value: 'scu_nope' }] }),
    )
    assert.is(unknown.body.scimType, 'invalidValue')
    const badPath = await scim.patch(`/Groups/${id}`, patchOp({ op: 'replace', path: 'owners', value: [] }))
    assert.is(badPath.body.scimType, 'invalidPath')

    assert.is((await scim.delete(`/Groups/${id}`)).status, 204)
    assert.is((await t.client.get(`/v1/teams/${id}`, { token: org.owner.token })).status, 404)
    assert.is((await scim.get(`/Groups/${id}`)).status, 404)
  } finally {
    await t.close()
  }
})

test('RFC 7644 §3.5.2 replace of members keeps team members that provisioning does not manage', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'keep')
    const scim = scimClient(t, await ownerScimToken(t, org))
    const team = await t.client.post('/v1/teams', {
      token: org.owner.token,
      json: { name: 'Mixed', memberIds: [org.member.memberId] },
    })
    const ann = (await scim.post('/Users', { userName: 'ann@keep.test' })).body.id
    const bob = (await scim.post('/Users', { userName: 'bob@keep.test' })).body.id
    const listed = await scim.get(`/Groups?filter=${encodeURIComponent('displayName eq "Mixed"')}`)
    assert.is(listed.body.Resources[0].id, team.body.item.id, 'existing teams are Groups')
    assert.equal(listed.body.Resources[0].members, [], 'members provisioning does not manage are not shown')
    const replaced = await scim.put(`/Groups/${team.body.item.id}`, {
      schemas: [GROUP_SCHEMA],
      displayName: 'Mixed',
      members: [{ value: ann }, { value: bob }],
    })
    assert.is(replaced.status, 200)
    assert.is(replaced.body.members.length, 2)
    const again = await scim.patch(
      `/Groups/${team.body.item.id}`,
      patchOp({ op: 'replace', path: 'members', value: [{ value: bob }] }),
    )
    assert.equal(
      again.body.members.map((m: { value: string }) => m.value),
      [bob],
    )
    const members = await t.client.get(`/v1/teams/${team.body.item.id}/members?limit=100`, { token: org.owner.token })
    const memberIds = members.body.items.map((m: { id: string }) => m.id)
    assert.ok(memberIds.includes(org.member.memberId), 'the invited member stays in the team')
    assert.is(memberIds.length, 2)
    const cleared = await scim.patch(`/Groups/${team.body.item.id}`, patchOp({ op: 'remove', path: 'members' }))
    assert.equal(cleared.body.members, [])
    const after = await t.client.get(`/v1/teams/${team.body.item.id}/members?limit=100`, { token: org.owner.token })
    assert.equal(
      after.body.items.map((m: { id: string }) => m.id),
      [org.member.memberId],
    )
  } finally {
    await t.close()
  }
})

test.run()
