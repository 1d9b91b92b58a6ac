/**
 * The delivered set of members over HTTP: every way an item arrives (grant, hub assigned to a
 * team, plugin assigned to a member or the organization) with its reasons, resolved files and
 * digest; plugin assignments; and `delivery.changed` in the feed for exactly the members concerned.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/delivery', { timeoutMs: 60_000 })

const SKILL = (name: string, body = `Do ${name}.`) =>
  `---\nname: ${name}\ndescription: The ${name} skill\n---\n\n${body}\n`

type Item = { objectId: string; type: string; name: string; reasons: Array<Record<string, unknown>>; files: any[] }

test('a member receives hub skills through a team and plugin objects through assignments, each with its reasons, files and a digest', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'deliv')
    const owner = org.owner.token
    const member = org.member.token
    const mk = async (type: string, title: string, input: Record<string, unknown>) =>
      (await t.client.post('/v1/config-objects', { token: owner, json: { type, sourceMode: 'cloud', title, input } }))
        .body.item.id as string
    const skill = (
      await t.client.post('/v1/skills', {
        token: owner,
        json: {
          skillMd: SKILL('review'),
          files: [{ path: 'scripts/run.sh', contentBase64: btoa('#!/bin/sh\necho hi\n'), executable: true }],
        },
      })
    ).body.item.id as string
    const mcp = await mk('mcp', 'Files', { normalizedPayload: { type: 'remote', url: 'https://mcp.example/sse' } })
    const command = await mk('command', 'Deploy', { rawSourceText: 'Deploy the thing' })
    const context = await mk('context', 'Style', { normalizedPayload: { content: 'Write short sentences.' } })

    // Nothing reaches the member yet.
    const empty = await t.client.get('/v1/me/delivery', { token: member })
    assert.is(empty.status, 200)
    assert.equal(empty.body.items, [])
    assert.equal(empty.body.principal, { kind: 'member', userId: org.member.userId, memberId: org.member.memberId })

    const team = (await t.client.post('/v1/teams', { token: owner, json: { name: 'Core' } })).body.item.id
    assert.is(
      (await t.client.post(`/v1/teams/${team}/members`, { token: owner, json: { memberId: org.member.memberId } }))
        .status,
      201,
    )
    const hub = (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Reviews' } })).body.item.id
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill } })
    const before = (await t.client.get('/v1/events', { token: member })).body.next
    assert.is(
      (await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { teamId: team } })).status,
      201,
    )
    const plugin = (await t.client.post('/v1/plugins', { token: owner, json: { name: 'Kit' } })).body.item.id
    for (const id of [mcp, command, context])
      await t.client.post(`/v1/plugins/${plugin}/config-objects`, { token: owner, json: { configObjectId: id } })
    const assigned = await t.client.post(`/v1/plugins/${plugin}/assignments`, {
      token: owner,
      json: { memberId: org.member.memberId },
    })
    assert.is(assigned.status, 201)
    assert.equal(
      [assigned.body.item.pluginId, assigned.body.item.memberId, assigned.body.item.orgWide],
      [plugin, org.member.memberId, false],
    )
    const again = await t.client.post(`/v1/plugins/${plugin}/assignments`, {
      token: owner,
      json: { memberId: org.member.memberId },
    })
    assert.equal([again.status, again.body.code], [409, 'already_assigned'])
    assert.is(
      (await t.client.post(`/v1/plugins/${plugin}/assignments`, { token: member, json: { orgWide: true } })).status,
      404,
      'a member without a grant does not see the plugin, let alone assign it',
    )

    const got = await t.client.get('/v1/me/delivery', { token: member })
    assert.is(got.status, 200)
    assert.is(got.headers.get('etag'), `"${got.body.digest}"`)
    const items = got.body.items as Item[]
    assert.equal(
      items.map((i) => `${i.type}:${i.name}`),
      ['command:deploy', 'context:style', 'mcp:files', 'skill:review'],
    )
    const review = items.find((i) => i.name === 'review')!
    assert.equal(review.reasons, [
      { via: 'hub', id: hub, name: 'Reviews', scope: 'team', team: { id: team, name: 'Core' } },
    ])
    assert.equal(
      review.files.map((f: { path: string; executable: boolean }) => [f.path, f.executable]),
      [
        ['SKILL.md', false],
        ['scripts/run.sh', true],
      ],
    )
    assert.is(review.files[1].content, '#!/bin/sh\necho hi\n')
    assert.is(review.files[1].size, 18)
    const deploy = items.find((i) => i.name === 'deploy')!
    assert.equal(deploy.reasons, [{ via: 'plugin', id: plugin, name: 'Kit', scope: 'member' }])
    assert.equal(
      deploy.files.map((f: { path: string }) => f.path),
      ['deploy.md'],
    )
    assert.equal((items.find((i) => i.name === 'files') as any).config, {
      mcp: { files: { type: 'remote', url: 'https://mcp.example/sse' } },
    })
    assert.equal((items.find((i) => i.name === 'style') as any).config, {
      instructions: ['.opencode/context/style.md'],
    })

    // The same skills as /v1/me/skills.
    const mySkills = await t.client.get('/v1/me/skills', { token: member })
    assert.equal(
      mySkills.body.items.map((s: { skill: { id: string } }) => s.skill.id),
      items.filter((i) => i.type === 'skill').map((i) => i.objectId),
    )

    // The feed told the member, by team and by member; the admin (in neither) heard nothing.
    const events = (await t.client.get(`/v1/events?after=${before}`, { token: member })).body.items.filter(
      (e: { kind: string }) => e.kind === 'delivery.changed',
    )
    assert.ok(
      events.some(
        (e: any) => e.data.scope === 'team' && e.data.teamIds.includes(team) && e.data.cause === 'skill_hub.assigned',
      ),
      JSON.stringify(events),
    )
    assert.ok(events.some((e: any) => e.data.scope === 'member' && e.data.cause === 'plugin.assigned'))
    const adminEvents = (await t.client.get(`/v1/events?after=${before}`, { token: org.admin.token })).body.items
    assert.ok(!adminEvents.some((e: { kind: string }) => e.kind === 'delivery.changed'), 'not concerned')

    // A new version changes the item's digest and the set's, and is announced to the team.
    const digest = got.body.digest
    const mark = (await t.client.get('/v1/events', { token: member })).body.next
    await t.client.post(`/v1/config-objects/${skill}/versions`, {
      token: owner,
      json: { input: { rawSourceText: SKILL('review', 'Review twice.') } },
    })
    const next = await t.client.get('/v1/me/delivery', { token: member })
    assert.not.equal(next.body.digest, digest)
    const reviewed = (next.body.items as Item[]).find((i) => i.name === 'review')!
    assert.ok(reviewed.files[0].content.includes('Review twice.'))
    assert.not.equal(reviewed.files[0].sha256, review.files[0].sha256)
    const versionEvents = (await t.client.get(`/v1/events?after=${mark}`, { token: member })).body.items
    assert.ok(
      versionEvents.some((e: any) => e.kind === 'delivery.changed' && e.data.cause === 'config_object.version_added'),
    )
    assert.is((await t.client.get('/v1/me/delivery', { token: member })).body.digest, next.body.digest, 'stable')

    // Leaving the team takes the hub's skill away; archiving the plugin its objects.
    await t.client.delete(`/v1/teams/${team}/members/${org.member.memberId}`, { token: owner })
    await t.client.post(`/v1/plugins/${plugin}/archive`, { token: owner })
    assert.equal((await t.client.get('/v1/me/delivery', { token: member })).body.items, [])
    await t.client.post(`/v1/plugins/${plugin}/restore`, { token: owner })

    // Org-wide and direct at once: both reasons; removing one assignment leaves the other.
    const orgWide = await t.client.post(`/v1/plugins/${plugin}/assignments`, { token: owner, json: { orgWide: true } })
    assert.is(orgWide.status, 201)
    const both = (await t.client.get('/v1/me/delivery', { token: member })).body.items as Item[]
    assert.equal(
      both
        .find((i) => i.name === 'deploy')!
        .reasons.map((r) => r.scope)
        .sort(),
      ['member', 'organization'],
    )
    const list = await t.client.get(`/v1/plugins/${plugin}/assignments`, { token: member })
    assert.is(list.status, 404, 'members without a grant do not see the plugin')
    const listed = await t.client.get(`/v1/plugins/${plugin}/assignments`, { token: owner })
    assert.is(listed.body.items.length, 2)
    assert.is(
      (await t.client.delete(`/v1/plugins/${plugin}/assignments/${assigned.body.item.id}`, { token: owner })).status,
      204,
    )
    assert.is(
      (await t.client.delete(`/v1/plugins/${plugin}/assignments/${assigned.body.item.id}`, { token: owner })).body.code,
      'plugin_assignment_not_found',
    )
    const left = (await t.client.get('/v1/me/delivery', { token: member })).body.items as Item[]
    assert.equal(
      left.find((i) => i.name === 'deploy')!.reasons.map((r) => r.scope),
      ['organization'],
    )
    // The API key of the owner reads the owner's own set (the skill they created is granted to them).
    const viaKey = await t.client.get('/v1/me/delivery', { apiKey: org.ownerKey.key })
    assert.is(viaKey.status, 200)
    assert.ok((viaKey.body.items as Item[]).some((i) => i.name === 'review' && i.reasons[0]!.via === 'grant'))
  } finally {
    await t.close()
  }
})

test.run()
