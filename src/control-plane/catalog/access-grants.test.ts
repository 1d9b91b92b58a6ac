/**
 * Grant resolution through the API: a member sees nothing they hold no grant for (404, exactly
 * like an unknown id), and gains access by a member grant, a team grant, an org-wide grant, or
 * catalog inheritance (marketplace → plugin → config object; skill hub → skill); revoking any of
 * these takes effect on the very next request. Also `GET /v1/me/skills` and its paths.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/access-grants', { timeoutMs: 60_000 })

const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

async function setup(fn: (t: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t, await buildFixtureOrg(t.client, 'grants'))
  } finally {
    await t.close()
  }
}

async function makeObject(t: TestControlPlane, token: string, name: string): Promise<string> {
  const res = await t.client.post('/v1/config-objects', {
    token,
    json: { type: 'skill', sourceMode: 'cloud', title: name, input: { rawSourceText: SKILL(name) } },
  })
  assert.is(res.status, 201, JSON.stringify(res.body))
  return res.body.item.id
}

async function sees(t: TestControlPlane, token: string, id: string): Promise<boolean> {
  const one = await t.client.get(`/v1/config-objects/${id}`, { token })
  const list = await t.client.get('/v1/config-objects?limit=100', { token })
  const inList = list.body.items.some((i: { id: string }) => i.id === id)
  assert.is(one.status === 200, inList, 'the list and the detail agree')
  if (one.status !== 200) {
    assert.is(one.status, 404)
    assert.is(one.body.code, 'config_object_not_found')
  }
  return inList
}

test('member, team and org-wide grants each make an object visible, and revoking each hides it at once', async () => {
  await setup(async (t, org) => {
    const id = await makeObject(t, org.owner.token, 'private-one')
    const member = org.member.token
    assert.not.ok(await sees(t, member, id), 'no grant: invisible')
    assert.is((await t.client.get(`/v1/config-objects/${id}/resolved`, { token: member })).status, 404)
    assert.is((await t.client.get(`/v1/config-objects/${id}/versions`, { token: member })).status, 404)
    assert.is(
      (await t.client.post(`/v1/config-objects/${id}/archive`, { token: member })).status,
      404,
      'writes too are 404, not 403',
    )

    const team = (
      await t.client.post('/v1/teams', {
        token: org.owner.token,
        json: { name: 'readers', memberIds: [org.member.memberId] },
      })
    ).body.item.id
    const principals: Array<[string, Record<string, unknown>]> = [
      ['member', { memberId: org.member.memberId }],
      ['team', { teamId: team }],
      ['org-wide', { orgWide: true }],
    ]
    for (const [label, principal] of principals) {
      const grant = await t.client.post(`/v1/config-objects/${id}/access`, {
        token: org.owner.token,
        json: { ...principal, role: 'viewer' },
      })
      assert.is(grant.status, 201, label)
      assert.ok(await sees(t, member, id), `${label} grant: visible`)
      assert.is((await t.client.get(`/v1/config-objects/${id}/resolved`, { token: member })).status, 200)
      const denied = await t.client.post(`/v1/config-objects/${id}/versions`, {
        token: member,
        json: { input: { rawSourceText: SKILL('private-one') } },
      })
      assert.is(denied.status, 403, 'a viewer cannot add versions')
      assert.equal(denied.body.details, { requiredRole: 'editor', role: 'viewer' })
      assert.is(
        (await t.client.delete(`/v1/config-objects/${id}/access/${grant.body.item.id}`, { token: org.owner.token }))
          .status,
        204,
      )
      assert.not.ok(await sees(t, member, id), `${label} grant revoked: invisible on the next request`)
    }
    // Removing the member from the team removes what the team grant gave.
    await t.client.post(`/v1/config-objects/${id}/access`, {
      token: org.owner.token,
      json: { teamId: team, role: 'editor' },
    })
    assert.is(
      (
        await t.client.post(`/v1/config-objects/${id}/versions`, {
          token: member,
          json: { input: { rawSourceText: SKILL('private-one') } },
        })
      ).status,
      201,
      'team editor may append',
    )
    await t.client.delete(`/v1/teams/${team}/members/${org.member.memberId}`, { token: org.owner.token })
    assert.not.ok(await sees(t, member, id))
  })
})

test('grants: roles upgrade in place, only managers list or change them, org-wide needs an admin, principals must be in the organization', async () => {
  await setup(async (t, org) => {
    const id = await makeObject(t, org.member.token, 'mine')
    const member = org.member.token
    const first = await t.client.post(`/v1/config-objects/${id}/access`, {
      token: member,
      json: { memberId: org.admin.memberId, role: 'viewer' },
    })
    const again = await t.client.post(`/v1/config-objects/${id}/access`, {
      token: member,
      json: { memberId: org.admin.memberId, role: 'editor' },
    })
    assert.is(again.body.item.id, first.body.item.id, 'one grant per principal; the role changed')
    assert.is(again.body.item.role, 'editor')
    const list = await t.client.get(`/v1/config-objects/${id}/access`, { token: member })
    assert.equal(
      list.body.items.map((g: { memberId: string; role: string }) => [g.memberId, g.role]),
      [
        [org.member.memberId, 'manager'],
        [org.admin.memberId, 'editor'],
      ],
      'the creator holds manager',
    )
    const orgWide = await t.client.post(`/v1/config-objects/${id}/access`, {
      token: member,
      json: { orgWide: true, role: 'viewer' },
    })
    assert.is(orgWide.status, 403, 'a member manager cannot grant org-wide')
    const both = await t.client.post(`/v1/config-objects/${id}/access`, {
      token: member,
      json: { memberId: org.admin.memberId, orgWide: true, role: 'viewer' },
    })
    assert.is(both.status, 422)
    const outsider = await buildFixtureOrg(t.client, 'outsider')
    const foreign = await t.client.post(`/v1/config-objects/${id}/access`, {
      token: member,
      json: { memberId: outsider.member.memberId, role: 'viewer' },
    })
    assert.is(foreign.status, 404)
    assert.is(foreign.body.code, 'member_not_found')
    // The admin acts as manager anyway; a plain viewer cannot see grants.
    const viewerObject = await makeObject(t, org.owner.token, 'owned')
    await t.client.post(`/v1/config-objects/${viewerObject}/access`, {
      token: org.owner.token,
      json: { memberId: org.member.memberId, role: 'viewer' },
    })
    assert.is((await t.client.get(`/v1/config-objects/${viewerObject}/access`, { token: member })).status, 403)
    assert.is((await t.client.get(`/v1/config-objects/${id}/access`, { token: org.admin.token })).status, 200)
    const audit = await t.client.get('/v1/audit-events?action=access.granted', { token: org.owner.token })
    assert.ok(audit.body.items.length >= 3)
  })
})

test('catalog inheritance: a marketplace grant shows its plugins and their objects as viewer, and removing any link hides them', async () => {
  await setup(async (t, org) => {
    const owner = org.owner.token
    const member = org.member.token
    const objectId = await makeObject(t, owner, 'in-plugin')
    const plugin = (await t.client.post('/v1/plugins', { token: owner, json: { name: 'Writers kit' } })).body.item.id
    const market = (await t.client.post('/v1/marketplaces', { token: owner, json: { name: 'Company' } })).body.item.id
    assert.is(
      (
        await t.client.post(`/v1/plugins/${plugin}/config-objects`, {
          token: owner,
          json: { configObjectId: objectId },
        })
      ).status,
      201,
    )
    assert.is(
      (await t.client.post(`/v1/marketplaces/${market}/plugins`, { token: owner, json: { pluginId: plugin } })).status,
      201,
    )
    assert.is((await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status, 404)
    assert.is((await t.client.get(`/v1/marketplaces/${market}`, { token: member })).status, 404)

    const grant = await t.client.post(`/v1/marketplaces/${market}/access`, {
      token: owner,
      json: {
        teamId: (
          await t.client.post('/v1/teams', { token: owner, json: { name: 'all', memberIds: [org.member.memberId] } })
        ).body.item.id,
        role: 'viewer',
      },
    })
    assert.is(grant.status, 201)
    assert.is((await t.client.get(`/v1/marketplaces/${market}`, { token: member })).status, 200)
    assert.is(
      (await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status,
      200,
      'plugin visible through the marketplace',
    )
    assert.equal(
      (await t.client.get('/v1/plugins', { token: member })).body.items.map((p: { id: string }) => p.id),
      [plugin],
    )
    assert.ok(await sees(t, member, objectId), 'object visible through plugin through marketplace')
    const resolved = await t.client.get(`/v1/plugins/${plugin}/resolved`, { token: member })
    assert.equal(
      resolved.body.items.map((r: { configObjectId: string }) => r.configObjectId),
      [objectId],
    )
    const market2 = await t.client.get(`/v1/marketplaces/${market}/resolved`, { token: member })
    assert.equal(market2.body.items[0].componentCounts, { skill: 1 })
    // Seen from the object: only the plugins the member can see.
    const hidden = (await t.client.post('/v1/plugins', { token: owner, json: { name: 'Hidden kit' } })).body.item.id
    assert.is(
      (await t.client.post(`/v1/config-objects/${objectId}/plugins`, { token: owner, json: { pluginId: hidden } }))
        .status,
      201,
    )
    assert.equal(
      (await t.client.get(`/v1/config-objects/${objectId}/plugins`, { token: member })).body.items.map(
        (p: { pluginId: string }) => p.pluginId,
      ),
      [plugin],
    )
    assert.equal(
      (await t.client.get(`/v1/config-objects/${objectId}/plugins`, { token: owner })).body.items.map(
        (p: { pluginId: string }) => p.pluginId,
      ),
      [plugin, hidden],
    )
    assert.is(
      (await t.client.post(`/v1/config-objects/${objectId}/plugins`, { token: owner, json: { pluginId: hidden } }))
        .status,
      409,
    )
    assert.is((await t.client.delete(`/v1/config-objects/${objectId}/plugins/${hidden}`, { token: owner })).status, 204)
    // Inherited access is viewer only.
    assert.is(
      (await t.client.patch(`/v1/plugins/${plugin}`, { token: member, json: { name: 'mine now' } })).status,
      403,
    )
    assert.is(
      (
        await t.client.post(`/v1/config-objects/${objectId}/versions`, {
          token: member,
          json: { input: { rawSourceText: SKILL('in-plugin') } },
        })
      ).status,
      403,
    )

    // An archived marketplace no longer passes visibility down.
    await t.client.post(`/v1/marketplaces/${market}/archive`, { token: owner })
    assert.is((await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status, 404)
    await t.client.post(`/v1/marketplaces/${market}/restore`, { token: owner })
    assert.is((await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status, 200)
    // Removing the object from the plugin hides the object only.
    await t.client.delete(`/v1/plugins/${plugin}/config-objects/${objectId}`, { token: owner })
    assert.not.ok(await sees(t, member, objectId))
    await t.client.post(`/v1/plugins/${plugin}/config-objects`, { token: owner, json: { configObjectId: objectId } })
    assert.ok(await sees(t, member, objectId))
    // Removing the plugin from the marketplace hides both.
    await t.client.delete(`/v1/marketplaces/${market}/plugins/${plugin}`, { token: owner })
    assert.is((await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status, 404)
    assert.not.ok(await sees(t, member, objectId))
    await t.client.post(`/v1/marketplaces/${market}/plugins`, { token: owner, json: { pluginId: plugin } })
    assert.ok(await sees(t, member, objectId))
    // Revoking the marketplace grant hides everything at once.
    await t.client.delete(`/v1/marketplaces/${market}/access/${grant.body.item.id}`, { token: owner })
    assert.is((await t.client.get(`/v1/marketplaces/${market}`, { token: member })).status, 404)
    assert.is((await t.client.get(`/v1/plugins/${plugin}`, { token: member })).status, 404)
    assert.not.ok(await sees(t, member, objectId))
    assert.equal((await t.client.get('/v1/plugins', { token: member })).body.items, [])
  })
})

test('skill hubs deliver their skills to assignees; /v1/me/skills lists each skill once with every path', async () => {
  await setup(async (t, org) => {
    const owner = org.owner.token
    const member = org.member.token
    const created = await t.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('pdf-tools') } })
    assert.is(created.status, 201)
    assert.is(created.body.item.name, 'pdf-tools')
    assert.is(created.body.item.description, 'The pdf-tools skill')
    const pdf = created.body.item.id
    const other = (await t.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('csv-tools') } })).body.item
      .id
    const bad = await t.client.post('/v1/skills', {
      token: owner,
      json: { skillMd: '---\nname: Not_Valid\ndescription: x\n---\nbody' },
    })
    assert.is(bad.status, 422)
    assert.is(bad.body.details.issues[0].path, 'skillMd.frontmatter.name')
    const hub = (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Docs' } })).body.item.id
    assert.is((await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Docs' } })).status, 409)
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: pdf } })
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: other } })
    const notSkill = (
      await t.client.post('/v1/config-objects', {
        token: owner,
        json: { type: 'context', sourceMode: 'cloud', title: 'ctx', input: { rawSourceText: 'x' } },
      })
    ).body.item.id
    assert.is(
      (await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: notSkill } })).body.code,
      'skill_not_found',
    )

    assert.equal((await t.client.get('/v1/me/skills', { token: member })).body.items, [])
    assert.is((await t.client.get(`/v1/skills/${pdf}`, { token: member })).status, 404)
    const team = (
      await t.client.post('/v1/teams', { token: owner, json: { name: 'docs team', memberIds: [org.member.memberId] } })
    ).body.item.id
    const byTeam = await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { teamId: team } })
    assert.is(byTeam.status, 201)
    assert.is(
      (await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { teamId: team } })).status,
      409,
    )
    await t.client.post(`/v1/config-objects/${pdf}/access`, {
      token: owner,
      json: { memberId: org.member.memberId, role: 'viewer' },
    })
    const mine = await t.client.get('/v1/me/skills', { token: member })
    assert.equal(
      mine.body.items.map((i: { skill: { name: string } }) => i.skill.name),
      ['pdf-tools', 'csv-tools'],
    )
    assert.equal(mine.body.items[0].paths, [
      { via: 'grant', hubId: null, hubName: null, principal: 'member', teamId: null },
      { via: 'hub', hubId: hub, hubName: 'Docs', principal: 'team', teamId: team },
    ])
    assert.equal(mine.body.items[1].paths, [
      { via: 'hub', hubId: hub, hubName: 'Docs', principal: 'team', teamId: team },
    ])
    // Assignees see the hub and its skills as viewer, with their resolved forms.
    assert.is((await t.client.get(`/v1/skill-hubs/${hub}`, { token: member })).status, 200)
    assert.is(
      (await t.client.get(`/v1/config-objects/${other}/resolved`, { token: member })).body.item.files[0].path,
      '.opencode/skills/csv-tools/SKILL.md',
    )
    assert.is(
      (await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: member, json: { skillId: pdf } })).status,
      403,
    )
    // Unassigning stops delivery at once; the direct grant path remains.
    await t.client.delete(`/v1/skill-hubs/${hub}/assignments/${byTeam.body.item.id}`, { token: owner })
    const after = await t.client.get('/v1/me/skills', { token: member })
    assert.equal(
      after.body.items.map((i: { skill: { name: string } }) => i.skill.name),
      ['pdf-tools'],
    )
    assert.is((await t.client.get(`/v1/config-objects/${other}`, { token: member })).status, 404)
    // Org-wide assignment reaches everyone, including the admin (who has no grant of their own).
    assert.is(
      (await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: org.admin.token, json: { orgWide: true } }))
        .status,
      201,
    )
    const admins = await t.client.get('/v1/me/skills', { token: org.admin.token })
    assert.equal(
      admins.body.items.map((i: { skill: { name: string }; paths: Array<{ principal: string }> }) => [
        i.skill.name,
        i.paths.map((p) => p.principal),
      ]),
      [
        ['pdf-tools', ['organization']],
        ['csv-tools', ['organization']],
      ],
    )
    // A deleted skill stops being delivered.
    await t.client.post(`/v1/config-objects/${other}/delete`, { token: owner })
    assert.equal(
      (await t.client.get('/v1/me/skills', { token: org.admin.token })).body.items.map(
        (i: { skill: { name: string } }) => i.skill.name,
      ),
      ['pdf-tools'],
    )
    assert.equal(
      (await t.client.get('/v1/skills', { token: owner })).body.items.map((s: { name: string }) => s.name),
      ['pdf-tools'],
    )
  })
})

test.run()
