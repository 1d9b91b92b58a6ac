/**
 * `GET /v1/events`: the organization change feed, as pages and as SSE, filtered by what the
 * caller may see, resumable, and shared by instances on one database.
 */
import { assert, suite, takeSse } from '../../../tests/harness.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/change-feed', { timeoutMs: 60_000 })

const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

async function makeSkill(t: TestControlPlane, token: string, name: string): Promise<string> {
  const res = await t.client.post('/v1/config-objects', {
    token,
    json: { type: 'skill', sourceMode: 'cloud', title: name, input: { rawSourceText: SKILL(name) } },
  })
  assert.is(res.status, 201, JSON.stringify(res.body))
  return res.body.item.id
}

async function stream(t: TestControlPlane, token: string, headers: Record<string, string> = {}): Promise<Response> {
  return await t.app.fetch(
    new Request('http://cp.test/v1/events', {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers },
    }),
  )
}

async function withOrg(fn: (t: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t, await buildFixtureOrg(t.client, 'feed'))
  } finally {
    await t.close()
  }
}

test('the page form lists config-object changes in order and continues from next', async () => {
  await withOrg(async (t, org) => {
    const start = await t.client.get('/v1/events', { token: org.owner.token })
    assert.is(start.status, 200)
    const after = start.body.next as number
    const id = await makeSkill(t, org.owner.token, 'alpha')
    const appended = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token: org.owner.token,
      json: { input: { rawSourceText: SKILL('alpha').replace('Do', 'Now do') } },
    })
    assert.is(appended.status, 201)
    const page = await t.client.get(`/v1/events?after=${after}`, { token: org.owner.token })
    // The creator's grant delivers the skill to them: each change also says so (delivery.changed).
    page.body.items = page.body.items.filter((e: { kind: string }) => e.kind !== 'delivery.changed')
    const kinds = page.body.items.map((e: { kind: string }) => e.kind)
    assert.equal(kinds, ['config_object.created', 'config_object.version_added'])
    assert.equal(page.body.items[0].subject, { type: 'config_object', id })
    const seqs = page.body.items.map((e: { seq: number }) => e.seq)
    assert.ok(seqs[1] > seqs[0], 'numbered in order')
    const rest = await t.client.get(`/v1/events?after=${page.body.next}`, { token: org.owner.token })
    assert.equal(rest.body.items, [])
    assert.is(rest.body.next, page.body.next)
  })
})

test('a member sees changes to objects they can read, and only a bare visibility hint for grants elsewhere', async () => {
  await withOrg(async (t, org) => {
    const after = (await t.client.get('/v1/events', { token: org.member.token })).body.next as number
    const hidden = await makeSkill(t, org.owner.token, 'hidden')
    const quiet = await t.client.get(`/v1/events?after=${after}`, { token: org.member.token })
    assert.equal(quiet.body.items, [], 'nothing about an object the member cannot read')
    assert.ok(quiet.body.next > after, 'next moves past changes the member may not see')
    const grant = await t.client.post(`/v1/config-objects/${hidden}/access`, {
      token: org.owner.token,
      json: { memberId: org.member.memberId, role: 'viewer' },
    })
    assert.is(grant.status, 201, JSON.stringify(grant.body))
    const version = await t.client.post(`/v1/config-objects/${hidden}/versions`, {
      token: org.owner.token,
      json: { input: { rawSourceText: SKILL('hidden').replace('Do', 'Then do') } },
    })
    assert.is(version.status, 201)
    const page = await t.client.get(`/v1/events?after=${quiet.body.next}`, { token: org.member.token })
    const items = (page.body.items as Array<{ kind: string; subject: unknown; data: unknown }>).filter(
      (e) => e.kind !== 'delivery.changed',
    )
    assert.equal(
      items.map((e) => e.kind),
      ['visibility.changed', 'config_object.version_added'],
    )
    assert.is(items[0]!.subject, null)
    assert.is(items[0]!.data, null)
    const owner = await t.client.get(`/v1/events?after=${quiet.body.next}`, { token: org.owner.token })
    assert.is(owner.body.items[0].kind, 'access.granted', 'admins see the grant itself')
  })
})

test('the SSE form streams new changes with ids, resumes after Last-Event-ID, and stops for a revoked session', async () => {
  await withOrg(async (t, org) => {
    const live = await stream(t, org.admin.token)
    assert.is(live.status, 200)
    assert.match(live.headers.get('content-type') ?? '', /text\/event-stream/)
    const first = await makeSkill(t, org.owner.token, 'one')
    await makeSkill(t, org.owner.token, 'two')
    const frames = await takeSse(live, 2, 8000)
    assert.equal(
      frames.map((f) => f.event),
      ['config_object.created', 'config_object.created'],
    )
    assert.is(JSON.parse(frames[0]!.data).subject.id, first)
    assert.ok(Number(frames[1]!.id) > Number(frames[0]!.id))

    const third = await makeSkill(t, org.owner.token, 'three')
    const resumed = await stream(t, org.admin.token, { 'last-event-id': frames[0]!.id! })
    const replay = await takeSse(resumed, 2, 8000)
    assert.equal(
      replay.map((f) => [f.id, JSON.parse(f.data).subject.id]),
      [
        [frames[1]!.id, JSON.parse(frames[1]!.data).subject.id],
        [replay[1]!.id, third],
      ],
    )

    const out = await stream(t, org.member.token)
    const signOut = await t.client.post('/v1/auth/sign-out', { token: org.member.token })
    assert.ok(signOut.status < 300, `sign-out answered ${signOut.status}`)
    // The stream re-checks its credential on every read: a change wakes it and it ends.
    await makeSkill(t, org.owner.token, 'four')
    const reader = out.body!.getReader()
    const deadline = Date.now() + 10_000
    let ended = false
    while (Date.now() < deadline) {
      const next = await Promise.race([
        reader.read(),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 500)),
      ])
      if (next?.done) {
        ended = true
        break
      }
    }
    assert.ok(ended, 'the stream of a signed-out session ends')
  })
})

test('a change made through one instance reaches a subscriber on another instance of the same database', async () => {
  const first = await startTestControlPlane()
  const second = await startTestControlPlane({ sameDatabaseAs: first, startAt: first.clock.now() })
  try {
    const org = await buildFixtureOrg(first.client, 'shared')
    const live = await stream(first, org.owner.token)
    const started = Date.now()
    const id = await makeSkill(second, org.owner.token, 'elsewhere')
    // PostgreSQL wakes the other instance at commit; SQLite (one process per file) falls back to polling.
    const [frame] = await takeSse(live, 1, 9000)
    assert.is(frame!.event, 'config_object.created')
    assert.is(JSON.parse(frame!.data).subject.id, id)
    assert.ok(Date.now() - started < 9000)
  } finally {
    await second.close()
    await first.close()
  }
})

test.run()
