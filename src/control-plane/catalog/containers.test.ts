/**
 * Plugins, marketplaces and skill hubs as containers: lifecycle moves, what deleting removes and
 * keeps, membership conflicts, and the resolved views' contents.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/catalog-containers', { timeoutMs: 60_000 })

const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

test('plugins and marketplaces: archive/restore moves, deletion keeps what they contained, resolved views show active members only', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'containers')
    const token = org.owner.token
    const mk = async (type: string, title: string, input: Record<string, unknown>) =>
      (await t.client.post('/v1/config-objects', { token, json: { type, sourceMode: 'cloud', title, input } })).body
        .item.id as string
    const skill = await mk('skill', 'S', { rawSourceText: SKILL('kit-skill') })
    const mcp = await mk('mcp', 'Files', { normalizedPayload: { type: 'remote', url: 'https://mcp.example/sse' } })
    const archived = await mk('command', 'Old', { rawSourceText: 'Do the old thing' })
    const plugin = (await t.client.post('/v1/plugins', { token, json: { name: 'Kit', description: 'Tools' } })).body
      .item
    assert.equal([plugin.status, plugin.memberCount, plugin.createdByMemberId], ['active', 0, org.owner.memberId])
    for (const id of [skill, mcp, archived])
      assert.is(
        (await t.client.post(`/v1/plugins/${plugin.id}/config-objects`, { token, json: { configObjectId: id } }))
          .status,
        201,
      )
    const dup = await t.client.post(`/v1/plugins/${plugin.id}/config-objects`, {
      token,
      json: { configObjectId: skill },
    })
    assert.is(dup.status, 409)
    assert.is(dup.body.code, 'already_in_plugin')
    await t.client.post(`/v1/config-objects/${archived}/archive`, { token })
    const members = await t.client.get(`/v1/plugins/${plugin.id}/config-objects?limit=2`, { token })
    assert.equal(
      members.body.items.map((m: { configObjectId: string }) => m.configObjectId),
      [skill, mcp],
    )
    assert.is(
      (await t.client.get(`/v1/plugins/${plugin.id}/config-objects?cursor=${members.body.nextCursor}`, { token })).body
        .items[0].configObject.status,
      'archived',
    )
    const resolved = await t.client.get(`/v1/plugins/${plugin.id}/resolved`, { token })
    assert.equal(
      resolved.body.items.map((r: { type: string; name: string }) => `${r.type}:${r.name}`),
      ['skill:kit-skill', 'mcp:files'],
      'archived members are left out',
    )
    assert.equal(resolved.body.items[1].config, { mcp: { files: { type: 'remote', url: 'https://mcp.example/sse' } } })
    const filtered = await t.client.get(`/v1/config-objects?plugin=${plugin.id}&type=mcp`, { token })
    assert.equal(
      filtered.body.items.map((i: { id: string }) => i.id),
      [mcp],
    )

    const market = (await t.client.post('/v1/marketplaces', { token, json: { name: 'Company' } })).body.item.id
    assert.is(
      (await t.client.post('/v1/marketplaces', { token: org.member.token, json: { name: 'Mine' } })).status,
      403,
      'members do not create marketplaces',
    )
    await t.client.post(`/v1/marketplaces/${market}/plugins`, { token, json: { pluginId: plugin.id } })
    assert.is(
      (await t.client.post(`/v1/marketplaces/${market}/plugins`, { token, json: { pluginId: plugin.id } })).body.code,
      'already_in_marketplace',
    )
    const view = await t.client.get(`/v1/marketplaces/${market}/resolved`, { token })
    assert.equal(view.body.items, [
      { plugin: { ...view.body.items[0].plugin, memberCount: 3 }, componentCounts: { mcp: 1, skill: 1 } },
    ])

    const archive = await t.client.post(`/v1/plugins/${plugin.id}/archive`, { token })
    assert.equal([archive.status, archive.body.item.status], [200, 'archived'])
    const again = await t.client.post(`/v1/plugins/${plugin.id}/archive`, { token })
    assert.equal(
      [again.status, again.body.code, again.body.details.status],
      [409, 'invalid_lifecycle_transition', 'archived'],
    )
    assert.equal(
      (await t.client.get('/v1/plugins?status=archived', { token })).body.items.map((p: { id: string }) => p.id),
      [plugin.id],
    )
    assert.equal((await t.client.get('/v1/plugins?status=active', { token })).body.items, [])
    assert.is((await t.client.post(`/v1/plugins/${plugin.id}/restore`, { token })).body.item.status, 'active')
    assert.is(
      (await t.client.patch(`/v1/plugins/${plugin.id}`, { token, json: { name: 'Kit 2', description: null } })).body
        .item.description,
      null,
    )

    assert.is((await t.client.delete(`/v1/plugins/${plugin.id}`, { token })).status, 204)
    assert.is((await t.client.get(`/v1/plugins/${plugin.id}`, { token })).status, 404)
    assert.is(
      (await t.client.get(`/v1/config-objects/${skill}`, { token })).status,
      200,
      'objects outlive their plugin',
    )
    assert.equal(
      (await t.client.get(`/v1/marketplaces/${market}/plugins`, { token })).body.items,
      [],
      'the listing went with the plugin',
    )
    assert.equal((await t.client.get(`/v1/config-objects/${skill}/plugins`, { token })).body.items, [])
    assert.is((await t.client.delete(`/v1/marketplaces/${market}`, { token })).status, 204)
    assert.equal((await t.client.get('/v1/marketplaces', { token })).body.items, [])
  } finally {
    await t.close()
  }
})

test('skill hubs: deleting one ends its deliveries and keeps its skills; grants on a hub let a team edit it', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'hubs')
    const owner = org.owner.token
    const skill = (
      await t.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('hub-skill'), title: 'Hub skill' } })
    ).body.item
    assert.is(skill.title, 'Hub skill')
    const hub = (
      await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Writing', description: 'Docs skills' } })
    ).body.item.id
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill.id } })
    await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { memberId: org.member.memberId } })
    assert.is((await t.client.get('/v1/me/skills', { token: org.member.token })).body.items.length, 1)
    const team = (
      await t.client.post('/v1/teams', { token: owner, json: { name: 'editors', memberIds: [org.member.memberId] } })
    ).body.item.id
    assert.is(
      (await t.client.patch(`/v1/skill-hubs/${hub}`, { token: org.member.token, json: { name: 'Mine' } })).status,
      403,
      'an assignee is a viewer',
    )
    await t.client.post(`/v1/skill-hubs/${hub}/access`, { token: owner, json: { teamId: team, role: 'editor' } })
    assert.is(
      (await t.client.patch(`/v1/skill-hubs/${hub}`, { token: org.member.token, json: { name: 'Writing 2' } })).body
        .item.name,
      'Writing 2',
    )
    assert.is(
      (await t.client.delete(`/v1/skill-hubs/${hub}/skills/${skill.id}`, { token: org.member.token })).status,
      204,
    )
    assert.is((await t.client.get(`/v1/skill-hubs/${hub}`, { token: owner })).body.item.skillCount, 0)
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill.id } })
    assert.is(
      (await t.client.delete(`/v1/skill-hubs/${hub}`, { token: org.member.token })).status,
      403,
      'editors do not delete',
    )
    assert.is((await t.client.delete(`/v1/skill-hubs/${hub}`, { token: owner })).status, 204)
    assert.equal((await t.client.get('/v1/me/skills', { token: org.member.token })).body.items, [])
    assert.is((await t.client.get(`/v1/skills/${skill.id}`, { token: owner })).status, 200)
    assert.is(
      (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Writing 2' } })).status,
      201,
      'the name is free again',
    )
  } finally {
    await t.close()
  }
})

test.run()
