/**
 * Who sees what in the change feed now that the audience is stored with each event: a member
 * sees exactly the events about what they can read, a bare `visibility.changed` exactly when
 * their reach changed, resumes where they left off, and a page costs what it returns, however
 * many events they cannot see; existing events get their audience from the migration.
 */
import { sql } from 'kysely'
import { assert, suite, takeSse } from '../../../tests/harness.ts'
import * as m0055 from '../../../migrations/control-plane/0055_change_audience.ts'
import { buildFixtureOrg, signUpPerson, type FixtureOrg, type FixturePerson } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/change-audience', { timeoutMs: 120_000 })

const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

interface Event {
  seq: number
  kind: string
  subject: { type: string; id: string } | null
  data: Record<string, unknown> | null
}

async function ok(res: Promise<{ status: number; body: any }>, status = 201): Promise<any> {
  const done = await res
  assert.is(done.status, status, JSON.stringify(done.body))
  return done.body
}

async function makeSkill(t: TestControlPlane, token: string, name: string): Promise<string> {
  const body = await ok(
    t.client.post('/v1/config-objects', {
      token,
      json: { type: 'skill', sourceMode: 'cloud', title: name, input: { rawSourceText: SKILL(name) } },
    }),
  )
  return body.item.id
}

async function version(t: TestControlPlane, token: string, id: string, text: string): Promise<void> {
  await ok(t.client.post(`/v1/config-objects/${id}/versions`, { token, json: { input: { rawSourceText: text } } }))
}

/**
 * Not a `delivery.changed`: those follow what reaches a member's delivered set (their own suite,
 * `delivery/delivery.test.ts`), beside the visibility events this suite checks.
 */
const notDelivery = (event: { kind?: string; event?: string }) => (event.kind ?? event.event) !== 'delivery.changed'

/** Every event after `after` for `token` (delivery events aside), following `next` page by page. */
async function feed(t: TestControlPlane, token: string, after: number, limit = 7): Promise<Event[]> {
  const out: Event[] = []
  let at = after
  for (;;) {
    const page = await ok(t.client.get(`/v1/events?after=${at}&limit=${limit}`, { token }), 200)
    out.push(...page.items.filter(notDelivery))
    assert.ok(page.next >= at, 'next never moves back')
    if (page.next === at) return out
    at = page.next
  }
}

/** The organization's newest event number, straight from the table. */
async function head(t: TestControlPlane): Promise<number> {
  const row = await t.app.deps.db
    .selectFrom('change_event')
    .select((eb) => eb.fn.max('seq').as('seq'))
    .executeTakeFirst()
  return Number(row?.seq ?? 0)
}

/** A second plain member, invited by the owner. */
async function secondMember(t: TestControlPlane, org: FixtureOrg): Promise<FixturePerson> {
  const email = 'other@feed-audience.test'
  const invite = await ok(t.client.post('/v1/invitations', { token: org.owner.token, json: { email, role: 'member' } }))
  const person = await signUpPerson(t.client, email, invite.token)
  const me = await ok(t.client.get('/v1/me', { token: person.token }), 200)
  return { email, ...person, memberId: me.member.id }
}

async function withOrg(fn: (t: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t, await buildFixtureOrg(t.client, 'feed-audience'))
  } finally {
    await t.close()
  }
}

test('a member sees whole events for exactly the objects they can read, by every path, and nothing else', async () => {
  await withOrg(async (t, org) => {
    const owner = org.owner.token
    const start = await head(t)
    const team = await ok(t.client.post('/v1/teams', { token: owner, json: { name: 'readers' } }))
    await ok(
      t.client.post(`/v1/teams/${team.item.id}/members`, { token: owner, json: { memberId: org.member.memberId } }),
    )
    const byTeam = await makeSkill(t, owner, 'by-team')
    await ok(
      t.client.post(`/v1/config-objects/${byTeam}/access`, {
        token: owner,
        json: { teamId: team.item.id, role: 'viewer' },
      }),
    )
    const byHub = await makeSkill(t, owner, 'by-hub')
    const hub = await ok(t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'hub' } }))
    await ok(t.client.post(`/v1/skill-hubs/${hub.item.id}/skills`, { token: owner, json: { skillId: byHub } }))
    await ok(
      t.client.post(`/v1/skill-hubs/${hub.item.id}/assignments`, {
        token: owner,
        json: { memberId: org.member.memberId },
      }),
    )
    const byMarketplace = await makeSkill(t, owner, 'by-marketplace')
    const plugin = await ok(t.client.post('/v1/plugins', { token: owner, json: { name: 'plugin' } }))
    await ok(
      t.client.post(`/v1/plugins/${plugin.item.id}/config-objects`, {
        token: owner,
        json: { configObjectId: byMarketplace },
      }),
    )
    const market = await ok(t.client.post('/v1/marketplaces', { token: owner, json: { name: 'market' } }))
    await ok(
      t.client.post(`/v1/marketplaces/${market.item.id}/plugins`, { token: owner, json: { pluginId: plugin.item.id } }),
    )
    await ok(
      t.client.post(`/v1/marketplaces/${market.item.id}/access`, {
        token: owner,
        json: { orgWide: true, role: 'viewer' },
      }),
    )
    const hidden = await makeSkill(t, owner, 'hidden')
    const names = { [byTeam]: 'by-team', [byHub]: 'by-hub', [byMarketplace]: 'by-marketplace', [hidden]: 'hidden' }
    for (const [id, name] of Object.entries(names)) await version(t, owner, id, SKILL(name).replace('Do', 'Now do'))

    const mine = await feed(t, org.member.token, start)
    const all = await feed(t, owner, start)
    const versioned = (events: Event[]) =>
      events.filter((e) => e.kind === 'config_object.version_added').map((e) => e.subject!.id)
    assert.equal(versioned(all).sort(), [byTeam, byHub, byMarketplace, hidden].sort())
    assert.equal(versioned(mine).sort(), [byTeam, byHub, byMarketplace].sort())
    // Every whole event about a config object is about one the member can read, and every config
    // object event they miss is about one they cannot: the stored audience agrees with the reads.
    const seen = new Set(mine.filter((e) => e.subject?.type === 'config_object').map((e) => e.subject!.id))
    for (const e of all.filter((e) => e.subject?.type === 'config_object')) {
      const read = await t.client.get(`/v1/config-objects/${e.subject!.id}`, { token: org.member.token })
      assert.is(read.status === 200, seen.has(e.subject!.id), `${e.kind} on ${e.subject!.id}`)
    }
    assert.ok(
      mine.every((e) => e.kind !== 'access.granted'),
      'grants themselves are for owners and admins',
    )
    const seqs = mine.map((e) => e.seq)
    assert.equal(
      seqs,
      [...seqs].sort((a, b) => a - b),
      'in feed order',
    )
    assert.equal(new Set(seqs).size, seqs.length, 'each event once')
  })
})

test('visibility.changed reaches exactly the members whose reach changed: teams, grants, hub assignments, roles, removal', async () => {
  await withOrg(async (t, org) => {
    const owner = org.owner.token
    const other = await secondMember(t, org)
    const hints = async (token: string, after: number) =>
      (await feed(t, token, after)).filter((e) => e.kind === 'visibility.changed').length
    const team = await ok(t.client.post('/v1/teams', { token: owner, json: { name: 'crew' } }))
    const skill = await makeSkill(t, owner, 'target')

    let at = await head(t)
    await ok(
      t.client.post(`/v1/teams/${team.item.id}/members`, { token: owner, json: { memberId: org.member.memberId } }),
    )
    assert.is(await hints(org.member.token, at), 1, 'joining a team')
    assert.is(await hints(other.token, at), 0, 'someone else joining a team')

    at = await head(t)
    const grant = await ok(
      t.client.post(`/v1/config-objects/${skill}/access`, {
        token: owner,
        json: { teamId: team.item.id, role: 'viewer' },
      }),
    )
    assert.is(await hints(org.member.token, at), 1, 'a grant to their team')
    assert.is(await hints(other.token, at), 0, 'a grant to a team they are not in')
    at = await head(t)
    await ok(t.client.delete(`/v1/config-objects/${skill}/access/${grant.item.id}`, { token: owner }), 204)
    assert.is(await hints(org.member.token, at), 1, 'a revoked grant of their team')
    assert.is(await hints(other.token, at), 0, 'a revoked grant of a team they are not in')

    at = await head(t)
    await ok(t.client.delete(`/v1/teams/${team.item.id}/members/${org.member.memberId}`, { token: owner }), 204)
    assert.is(await hints(org.member.token, at), 1, 'leaving a team')

    const hub = await ok(t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'assigned' } }))
    await ok(t.client.post(`/v1/skill-hubs/${hub.item.id}/skills`, { token: owner, json: { skillId: skill } }))
    at = await head(t)
    const assignment = await ok(
      t.client.post(`/v1/skill-hubs/${hub.item.id}/assignments`, {
        token: owner,
        json: { memberId: org.member.memberId },
      }),
    )
    const assigned = await feed(t, org.member.token, at)
    assert.equal(
      assigned.map((e) => e.kind),
      ['skill_hub.assigned'],
      'the assignee sees the assignment whole: they now see the hub',
    )
    assert.is(await hints(other.token, at), 0)
    at = await head(t)
    await ok(t.client.delete(`/v1/skill-hubs/${hub.item.id}/assignments/${assignment.item.id}`, { token: owner }), 204)
    assert.equal(
      (await feed(t, org.member.token, at)).map((e) => e.kind),
      ['visibility.changed'],
      'unassigned: a hint, since they no longer see the hub',
    )

    at = await head(t)
    await ok(t.client.patch(`/v1/members/${other.memberId}`, { token: owner, json: { role: 'admin' } }), 200)
    await ok(t.client.patch(`/v1/members/${other.memberId}`, { token: owner, json: { role: 'member' } }), 200)
    const relogged = await ok(
      t.client.post('/v1/auth/sign-in', { json: { email: other.email, password: other.password } }),
      200,
    )
    assert.is(await hints(relogged.session.token, at), 2, 'their own role changes')
    assert.is(await hints(org.member.token, at), 0, "someone else's role changes")

    at = await head(t)
    await ok(t.client.delete(`/v1/members/${other.memberId}`, { token: owner }), 204)
    assert.is(await hints(org.member.token, at), 0, "someone else's removal")
    const audience = await sql<{
      principal: string
      hint: number
    }>`select a.principal, a.hint from change_audience a inner join change_event e on e.org_id = a.org_id and e.seq = a.seq where e.kind = 'member.removed' and e.subject_id = ${other.memberId}`.execute(
      t.app.deps.db,
    )
    assert.equal(
      audience.rows.map((r) => [r.principal, Number(r.hint)]),
      [[`member:${other.memberId}`, 1]],
      'the removed member is the one told',
    )
    assert.ok(
      (await feed(t, owner, at)).some((e) => e.kind === 'member.removed'),
      'admins see the removal',
    )
  })
})

test("a member's SSE stream carries only what they see and resumes after Last-Event-ID", async () => {
  await withOrg(async (t, org) => {
    const owner = org.owner.token
    const visible = await makeSkill(t, owner, 'shared')
    await ok(
      t.client.post(`/v1/config-objects/${visible}/access`, { token: owner, json: { orgWide: true, role: 'viewer' } }),
    )
    const open = (headers: Record<string, string> = {}) =>
      t.app.fetch(
        new Request('http://cp.test/v1/events', {
          headers: { authorization: `Bearer ${org.member.token}`, accept: 'text/event-stream', ...headers },
        }),
      )
    const live = await open()
    await makeSkill(t, owner, 'unseen-1')
    await version(t, owner, visible, SKILL('shared').replace('Do', 'Then do'))
    await makeSkill(t, owner, 'unseen-2')
    await version(t, owner, visible, SKILL('shared').replace('Do', 'Finally do'))
    const frames = await takeSse(live, 2, 8000, notDelivery)
    assert.equal(
      frames.map((f) => [f.event, JSON.parse(f.data).subject.id]),
      [
        ['config_object.version_added', visible],
        ['config_object.version_added', visible],
      ],
    )
    const resumed = await open({ 'last-event-id': frames[0]!.id! })
    const [again] = await takeSse(resumed, 1, 8000, notDelivery)
    assert.is(again!.id, frames[1]!.id, 'resumes with the next event the member may see, skipping the rest')
  })
})

test('a page for a member who sees none of thousands of events is short, moves next to the head, and does not scan them', async () => {
  await withOrg(async (t, org) => {
    const db = t.app.deps.db
    const start = await head(t)
    const hidden = await makeSkill(t, org.owner.token, 'hidden')
    // Thousands of changes on an object the member cannot see, as the product writes them: the
    // event and its audience (the owner, who created it).
    const first = (await head(t)) + 1
    const count = 3000
    const now = new Date().toISOString()
    for (let i = 0; i < count; i += 500) {
      const seqs = Array.from({ length: Math.min(500, count - i) }, (_, j) => first + i + j)
      await db
        .insertInto('change_event')
        .values(
          seqs.map((seq) => ({
            org_id: org.orgId,
            seq,
            kind: 'config_object.version_added',
            subject_type: 'config_object',
            subject_id: hidden,
            data: null,
            created_at: now,
          })),
        )
        .execute()
      await db
        .insertInto('change_audience')
        .values(seqs.map((seq) => ({ org_id: org.orgId, seq, principal: `member:${org.owner.memberId}`, hint: 0 })))
        .execute()
    }
    if (t.databaseUrl) await sql`select setval('change_event_seq', ${first + count})`.execute(db)
    const visible = await makeSkill(t, org.owner.token, 'visible')
    await ok(
      t.client.post(`/v1/config-objects/${visible}/access`, {
        token: org.owner.token,
        json: { memberId: org.member.memberId, role: 'viewer' },
      }),
    )
    const began = performance.now()
    const page = await ok(t.client.get(`/v1/events?after=${start}&limit=50`, { token: org.member.token }), 200)
    const took = performance.now() - began
    assert.equal(
      page.items.filter(notDelivery).map((e: Event) => e.kind),
      ['visibility.changed'],
      'only the grant reaches them, past 3,000 changes they cannot see',
    )
    assert.is(page.next, await head(t), 'next is the head')
    // Checking 3,000 events one by one took seconds; the index ranges take milliseconds.
    assert.ok(took < 1000, `the page took ${Math.round(took)} ms`)
    const limited = await ok(t.client.get(`/v1/events?after=${first - 1}&limit=5`, { token: org.owner.token }), 200)
    assert.is(limited.items.length, 5)
    assert.is(limited.next, first + 4, "an admin's page ends at its last event")
  })
})

test('the migration gives existing events the audience readers gave them: subject seers whole, hints to everyone', async () => {
  await withOrg(async (t, org) => {
    const owner = org.owner.token
    const start = await head(t)
    const visible = await makeSkill(t, owner, 'visible')
    await ok(
      t.client.post(`/v1/config-objects/${visible}/access`, {
        token: owner,
        json: { memberId: org.member.memberId, role: 'viewer' },
      }),
    )
    await version(t, owner, visible, SKILL('visible').replace('Do', 'Now do'))
    const hidden = await makeSkill(t, owner, 'hidden')
    await version(t, owner, hidden, SKILL('hidden').replace('Do', 'Now do'))
    const team = await ok(t.client.post('/v1/teams', { token: owner, json: { name: 'other-team' } }))
    await ok(
      t.client.post(`/v1/teams/${team.item.id}/members`, { token: owner, json: { memberId: org.admin.memberId } }),
    )
    const db = t.app.deps.db
    await db.deleteFrom('change_audience').execute()
    await m0055.backfill(db)
    const kinds = (await feed(t, org.member.token, start)).map((e) => [e.kind, e.subject?.id ?? null])
    assert.equal(kinds, [
      ['config_object.created', visible],
      ['visibility.changed', null],
      ['config_object.version_added', visible],
      ['visibility.changed', null],
    ])
  })
})

test('a member polling while writers commit concurrently misses nothing: what they followed equals a fresh read', async () => {
  await withOrg(async (t, org) => {
    const owner = org.owner.token
    const start = await head(t)
    let writing = true
    const followed: number[] = []
    const follower = (async () => {
      let at = start
      // Short pages move next to the head; keep polling until the writers are done and one more
      // read finds nothing new.
      for (;;) {
        const done = !writing
        const page = await ok(t.client.get(`/v1/events?after=${at}&limit=3`, { token: org.member.token }), 200)
        followed.push(...page.items.filter(notDelivery).map((e: Event) => e.seq))
        if (page.next === at && done) return
        at = page.next
      }
    })()
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; i < 4; i++) {
          const id = await makeSkill(t, owner, `w${w}-s${i}`)
          if (i % 2 === 0)
            await ok(
              t.client.post(`/v1/config-objects/${id}/access`, {
                token: owner,
                json: { memberId: org.member.memberId, role: 'viewer' },
              }),
            )
          await version(t, owner, id, SKILL(`w${w}-s${i}`).replace('Do', 'Now do'))
        }
      }),
    )
    writing = false
    await follower
    const fresh = (await feed(t, org.member.token, start)).map((e) => e.seq)
    assert.is(fresh.length, 16, 'a hint per grant and the version of each granted object')
    assert.equal(followed, fresh)
  })
})

test.run()
