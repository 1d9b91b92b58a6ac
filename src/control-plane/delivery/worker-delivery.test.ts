/**
 * A Worker as a delivery principal: its own delivery set (hubs, plugins, model providers) read
 * with its activity token, provider keys only there, the feed showing it only its own delivery
 * events, and a revoked token refused. Uses the real `process` provisioner.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { startAsyncTestPlane } from '../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/worker-delivery', { timeoutMs: 90_000 })

const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

test('a Worker reads its own delivery with its activity token, provider keys reach only it, and its feed shows only its delivery events', async () => {
  const t = await startAsyncTestPlane({ listen: true })
  try {
    const org = await buildFixtureOrg(t.client, 'wdeliv')
    const owner = org.owner.token
    const skill = (await t.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('triage') } })).body.item.id
    const hub = (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Ops' } })).body.item.id
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill } })
    const provider = await t.client.post('/v1/llm-providers', {
      token: owner,
      json: {
        name: 'inhouse',
        custom: { baseUrl: 'https://llm.example/v1', api: 'openai-compatible' },
        models: ['small'],
        apiKey: 'sk-secret-provider-key',
      },
    })
    assert.is(provider.status, 201)
    const created = await t.client.post('/v1/workers', {
      token: owner,
      json: { name: 'runner', provisioner: 'process' },
    })
    const workerId = created.body.item.id as string
    const issued = await t.client.post(`/v1/workers/${workerId}/tokens`, { token: owner })
    assert.is(issued.status, 201)
    const activity: string = issued.body.item.tokens.activity

    const empty = await t.client.get('/v1/me/delivery', { token: activity })
    assert.is(empty.status, 200)
    assert.equal(empty.body.principal, { kind: 'worker', workerId })
    assert.equal(empty.body.items, [])
    const mark = (await t.client.get('/v1/events', { token: activity })).body.next

    // Members cannot set it; a missing id changes nothing.
    const body = { hubIds: [hub], pluginIds: [], llmProviderIds: [provider.body.item.id] }
    assert.is(
      (await t.client.put(`/v1/workers/${workerId}/delivery`, { token: org.member.token, json: body })).status,
      403,
    )
    const bad = await t.client.put(`/v1/workers/${workerId}/delivery`, {
      token: owner,
      json: { ...body, pluginIds: [`plg_${hub.slice(5)}`] },
    })
    assert.equal([bad.status, bad.body.code], [404, 'plugin_not_found'], JSON.stringify(bad.body))
    const set = await t.client.put(`/v1/workers/${workerId}/delivery`, { token: owner, json: body })
    assert.is(set.status, 200)
    assert.equal(set.body.item, { workerId, hubIds: [hub], pluginIds: [], llmProviderIds: [provider.body.item.id] })
    assert.ok(!JSON.stringify(set.body).includes('sk-secret'), 'the key is never in the admin answer')

    const got = await t.client.get('/v1/me/delivery', { token: activity })
    assert.equal(
      got.body.items.map((i: { type: string; name: string }) => `${i.type}:${i.name}`),
      ['llm_provider:inhouse', 'skill:triage'],
    )
    const llm = got.body.items[0]
    assert.equal(llm.reasons, [{ via: 'worker', id: workerId, name: 'runner', scope: 'worker' }])
    assert.equal(llm.config.provider.inhouse.options, {
      baseURL: 'https://llm.example/v1',
      apiKey: 'sk-secret-provider-key',
    })
    assert.equal(got.body.items[1].reasons, [{ via: 'hub', id: hub, name: 'Ops', scope: 'worker' }])

    // No member receives the provider or its key, not even the owner who created it.
    const mine = await t.client.get('/v1/me/delivery', { token: owner })
    assert.ok(!JSON.stringify(mine.body).includes('sk-secret'))

    // The Worker's feed: only delivery events naming it, from the change onwards.
    await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Unrelated' } })
    await t.client.post(`/v1/config-objects/${skill}/versions`, {
      token: owner,
      json: { input: { rawSourceText: SKILL('triage') + 'More.\n' } },
    })
    const feed = await t.client.get(`/v1/events?after=${mark}`, { token: activity })
    assert.is(feed.status, 200)
    assert.ok(feed.body.items.length >= 2, JSON.stringify(feed.body.items))
    for (const e of feed.body.items) {
      assert.is(e.kind, 'delivery.changed')
      assert.equal([e.data.scope, e.data.workerIds], ['worker', [workerId]])
    }
    assert.equal(
      feed.body.items.map((e: { data: { cause: string } }) => e.data.cause),
      ['worker.delivery_updated', 'config_object.version_added'],
    )
    // A member is not told about the Worker's delivery.
    const memberFeed = await t.client.get(`/v1/events?after=${mark}`, { token: org.member.token })
    assert.ok(!memberFeed.body.items.some((e: { kind: string }) => e.kind === 'delivery.changed'))

    // Other routes refuse the activity token; a revoked one is refused here too.
    assert.is((await t.client.get('/v1/skills', { token: activity })).status, 401)
    assert.is((await t.client.delete(`/v1/workers/${workerId}/tokens`, { token: owner })).status, 204)
    assert.is((await t.client.get('/v1/me/delivery', { token: activity })).status, 401)
    assert.is((await t.client.get('/v1/events', { token: activity })).status, 401)
  } finally {
    const rows = await t.app.deps.db.selectFrom('worker').select('runtime_pid').execute()
    await t.close()
    for (const pid of rows.map((r) => r.runtime_pid)) {
      try {
        if (pid) process.kill(pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }
})

test.run()
