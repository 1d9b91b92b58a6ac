/**
 * A plain member's lists are answered by one of three plans (the set of what they reach, a bounded
 * walk checking each row, or the walk falling back to the set), chosen by how much they reach and
 * how dense it is. Whatever the plan, every page size must list exactly what the set condition
 * always selected, in id order, each object once, and a revoked grant must stop applying at once.
 */
import { CompiledQuery, sql } from 'kysely'
import { assert, suite } from '../../../tests/harness.ts'
import type { Actor } from '../admin/audit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { watchDirectReads } from '../../storage/database.ts'
import { queryPlan } from '../testing/query-plan.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'
import { assignedHubIds, grantedIds, visibleCondition } from './visibility-sql.ts'
import { objectQuery } from './config-objects.ts'

const test = suite('control-plane/visible-page', { timeoutMs: 120_000 })

const skillMd = (i: number) => `---\nname: vis-${i}\ndescription: Visibility ${i}\n---\n\nBody ${i}.\n`

async function call(t: TestControlPlane, token: string, method: 'post' | 'get', path: string, json?: unknown) {
  const res = method === 'post' ? await t.client.post(path, { token, json }) : await t.client.get(path, { token })
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body)}`)
  return res.body
}

async function walk(t: TestControlPlane, token: string, path: string, limit: number): Promise<string[]> {
  const out: string[] = []
  let cursor: string | null = null
  do {
    const sep = path.includes('?') ? '&' : '?'
    const body = await call(t, token, 'get', `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    out.push(...body.items.map((i: { id?: string; skill?: { id: string } }) => i.skill?.id ?? i.id!))
    cursor = body.nextCursor
  } while (cursor)
  return out
}

test('every page size lists exactly what the set condition selects, whichever plan answers', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'visible')
    const owner = org.owner.token
    const db = t.app.deps.db
    const skills: string[] = []
    for (let i = 0; i < 90; i++)
      skills.push((await call(t, owner, 'post', '/v1/skills', { skillMd: skillMd(i) })).item.id)
    const team = (await call(t, owner, 'post', '/v1/teams', { name: 'vis team', memberIds: [org.member.memberId] }))
      .item.id
    const hub = async (name: string, members: string[]) => {
      const id = (await call(t, owner, 'post', '/v1/skill-hubs', { name })).item.id
      for (const skillId of members) await call(t, owner, 'post', `/v1/skill-hubs/${id}/skills`, { skillId })
      return id
    }
    // Reach through every path, dense in the first third and sparse after it.
    const assigned = await hub(
      'assigned',
      skills.filter((_, i) => i < 30 && i % 4 !== 3),
    )
    await call(t, owner, 'post', `/v1/skill-hubs/${assigned}/assignments`, { memberId: org.member.memberId })
    const teamHub = await hub(
      'team',
      skills.filter((_, i) => i >= 30 && i % 9 === 0),
    )
    await call(t, owner, 'post', `/v1/skill-hubs/${teamHub}/assignments`, { teamId: team })
    const viewedHub = await hub(
      'viewed',
      skills.filter((_, i) => i % 13 === 5),
    )
    await call(t, owner, 'post', `/v1/skill-hubs/${viewedHub}/access`, {
      memberId: org.member.memberId,
      role: 'viewer',
    })
    const plugin = (await call(t, owner, 'post', '/v1/plugins', { name: 'vis plugin' })).item.id
    for (const [i, id] of skills.entries())
      if (i % 17 === 2) await call(t, owner, 'post', `/v1/plugins/${plugin}/config-objects`, { configObjectId: id })
    await call(t, owner, 'post', `/v1/plugins/${plugin}/access`, { teamId: team, role: 'viewer' })
    await call(t, owner, 'post', `/v1/config-objects/${skills[61]}/access`, {
      memberId: org.member.memberId,
      role: 'viewer',
    })
    await call(t, owner, 'post', `/v1/config-objects/${skills[75]}/access`, { teamId: team, role: 'viewer' })
    const orgWide = (
      await call(t, owner, 'post', `/v1/config-objects/${skills[88]}/access`, { orgWide: true, role: 'viewer' })
    ).item.id

    const actor: Actor = {
      orgId: org.orgId,
      userId: org.member.userId,
      memberId: org.member.memberId,
      role: 'member',
      credential: 'session',
      apiKeyId: null,
    }
    const expectedVisible = async () =>
      (
        await objectQuery(db, org.orgId)
          .where('co.object_type', '=', 'skill')
          .where('co.status', '!=', 'deleted')
          .where(visibleCondition(db, actor, 'config_object', 'co.id'))
          .orderBy('co.id')
          .execute()
      ).map((r) => r.id)
    const expectedReceived = async () =>
      (
        await db
          .selectFrom('config_object as co')
          .select('co.id')
          .where('co.org_id', '=', org.orgId)
          .where('co.object_type', '=', 'skill')
          .where('co.status', '=', 'active')
          .where((eb) =>
            eb.or([
              eb('co.id', 'in', grantedIds(db, actor, 'config_object')),
              eb(
                'co.id',
                'in',
                db
                  .selectFrom('skill_hub_skill as shs')
                  .select('shs.config_object_id')
                  .where('shs.hub_id', 'in', assignedHubIds(db, actor)),
              ),
            ]),
          )
          .orderBy('co.id')
          .execute()
      ).map((r) => r.id)

    const check = async (label: string) => {
      const visible = await expectedVisible()
      const received = await expectedReceived()
      assert.ok(visible.length > 20 && visible.length < skills.length, `${label}: a partial view (${visible.length})`)
      for (const limit of [1, 2, 3, 5, 8, 50, 100]) {
        const where = `${label}, limit ${limit}`
        assert.equal(await walk(t, org.member.token, '/v1/config-objects?type=skill', limit), visible, where)
        assert.equal(await walk(t, org.member.token, '/v1/skills', limit), visible, where)
        assert.equal(await walk(t, org.member.token, '/v1/me/skills', limit), received, where)
      }
      return visible
    }
    const before = await check('all paths')
    assert.ok(before.includes(skills[88]!))
    // A revoked grant stops applying on the very next page, whichever plan answers it.
    const revoked = await t.client.delete(`/v1/config-objects/${skills[88]}/access/${orgWide}`, { token: owner })
    assert.is(revoked.status, 204)
    const after = await check('after a revocation')
    assert.not.ok(after.includes(skills[88]!))
    assert.is(after.length, before.length - 1)
    // Cursors stay bound to their list and filters, whichever plan issued them.
    const page = await call(t, org.member.token, 'get', '/v1/config-objects?type=skill&limit=2')
    const foreign = await t.client.get(`/v1/config-objects?type=agent&limit=2&cursor=${page.nextCursor}`, {
      token: org.member.token,
    })
    assert.is(foreign.status, 400)
    assert.is(foreign.body.code, 'invalid_cursor')
  } finally {
    await t.close()
  }
})

test('each plan is an index range on config_object, never a scan of the catalog', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'visible-plans')
    const owner = org.owner.token
    const skills: string[] = []
    for (let i = 0; i < 40; i++)
      skills.push((await call(t, owner, 'post', '/v1/skills', { skillMd: skillMd(i) })).item.id)
    const hub = (await call(t, owner, 'post', '/v1/skill-hubs', { name: 'plans' })).item.id
    for (const skillId of skills.slice(0, 30)) await call(t, owner, 'post', `/v1/skill-hubs/${hub}/skills`, { skillId })
    await call(t, owner, 'post', `/v1/skill-hubs/${hub}/assignments`, { memberId: org.member.memberId })
    await sql`analyze`.execute(t.app.deps.db)
    const executor = t.app.deps.db.getExecutor() as unknown as {
      executeQuery: (q: { sql: string; parameters: readonly unknown[] }) => Promise<unknown>
    }
    const original = executor.executeQuery
    const seen: Array<{ sql: string; parameters: readonly unknown[] }> = []
    executor.executeQuery = function (q) {
      if (/from "config_object" as "co"/.test(q.sql)) seen.push(q)
      return original.call(this, q)
    }
    // Prepared pages read past the executor, on the read connection.
    const stopWatching = watchDirectReads(t.app.deps.db, (text, parameters) => {
      if (/from "config_object" as "co"/.test(text)) seen.push(CompiledQuery.raw(text, [...parameters]))
    })
    try {
      // limit 1: the reach (30) is over the cap, so the walk runs; limit 50: the set answers.
      for (const limit of [1, 50]) {
        const first = await call(t, org.member.token, 'get', `/v1/me/skills?limit=${limit}`)
        await call(t, org.member.token, 'get', `/v1/me/skills?limit=${limit}&cursor=${first.nextCursor ?? ''}`).catch(
          () => undefined,
        )
        await call(t, org.member.token, 'get', `/v1/config-objects?type=skill&limit=${limit}`)
      }
    } finally {
      executor.executeQuery = original
      stopWatching()
    }
    assert.ok(seen.length >= 5, `queries seen: ${seen.length}`)
    for (const q of seen) {
      const plan = await queryPlan(t.app.deps.db, q as never)
      assert.not.match(plan.text, /SCAN co\b(?! USING)|Seq Scan on config_object\b/, plan.text)
    }
  } finally {
    await t.close()
  }
})

test("a later page reads each hub's objects from its cursor on, not everything the member reaches", async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'visible-after')
    const owner = org.owner.token
    const hub = (await call(t, owner, 'post', '/v1/skill-hubs', { name: 'after' })).item.id
    for (let i = 0; i < 12; i++) {
      const skillId = (await call(t, owner, 'post', '/v1/skills', { skillMd: skillMd(i) })).item.id
      await call(t, owner, 'post', `/v1/skill-hubs/${hub}/skills`, { skillId })
    }
    await call(t, owner, 'post', `/v1/skill-hubs/${hub}/assignments`, { memberId: org.member.memberId })
    await sql`analyze`.execute(t.app.deps.db)
    const seen: CompiledQuery[] = []
    const startsAtCursor = /"shs"\."config_object_id" >/
    const executor = t.app.deps.db.getExecutor() as unknown as {
      executeQuery: (q: { sql: string; parameters: readonly unknown[] }) => Promise<unknown>
    }
    const original = executor.executeQuery
    executor.executeQuery = function (q) {
      if (startsAtCursor.test(q.sql)) seen.push(CompiledQuery.raw(q.sql, [...q.parameters]))
      return original.call(this, q)
    }
    const stopWatching = watchDirectReads(t.app.deps.db, (text, parameters) => {
      if (startsAtCursor.test(text)) seen.push(CompiledQuery.raw(text, [...parameters]))
    })
    let listed: string[]
    try {
      // Pages of 5 over 12 received skills: the reach is under the cap, so the set form answers.
      listed = await walk(t, org.member.token, '/v1/me/skills', 5)
      await walk(t, org.member.token, '/v1/config-objects?type=skill', 5)
    } finally {
      executor.executeQuery = original
      stopWatching()
    }
    assert.is(listed.length, 12)
    assert.ok(seen.length >= 2, `later-page statements starting at the cursor: ${seen.length}`)
    for (const q of seen) {
      const plan = await queryPlan(t.app.deps.db, q as never)
      // The hub's objects are a range from the cursor: an index condition, not a filter on all of them.
      assert.match(
        plan.text,
        /shs USING (COVERING )?INDEX \w+ \([^)]*config_object_id>\?\)|Index Cond: [^|]*config_object_id > /,
        plan.text,
      )
    }
  } finally {
    await t.close()
  }
})

test.run()
