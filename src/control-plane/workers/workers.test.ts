/**
 * Workers end to end with the real `process` provisioner: each Worker is a child
 * `service-server --mode workspace` that reports heartbeats over HTTP to a listening control
 * plane. Every control-plane response goes through the contract client.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/workers', { timeoutMs: 60_000 })

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function pidsOf(t: AsyncTestPlane): Promise<number[]> {
  const rows = await t.app.deps.db.selectFrom('worker').select('runtime_pid').execute()
  return rows.map((r) => r.runtime_pid).filter((p): p is number => typeof p === 'number')
}

async function killAll(pids: number[]): Promise<void> {
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
}

async function healthy(t: AsyncTestPlane, org: FixtureOrg, id: string, timeoutMs = 15_000) {
  return waitFor(
    () => t.client.get(`/v1/workers/${id}`, { token: org.owner.token }),
    (r) => r.body.item.state !== 'provisioning',
    timeoutMs,
    50,
  )
}

test('a process Worker becomes healthy, its issued host and client tokens work against the runtime, and a killed runtime turns unreachable', async () => {
  const t = await startAsyncTestPlane({ listen: true })
  const pids: number[] = []
  try {
    const org = await buildFixtureOrg(t.client, 'wrk')
    const started = Date.now()
    const created = await t.client.post('/v1/workers', {
      token: org.admin.token,
      json: { name: 'builder', description: 'CI runtime', provisioner: 'process' },
    })
    assert.is(created.status, 202)
    assert.equal([created.body.item.state, created.body.item.stateReason], ['provisioning', 'created'])
    const id: string = created.body.item.id
    const ready = await healthy(t, org, id)
    assert.equal([ready.body.item.state, ready.body.item.stateReason], ['healthy', 'heartbeat'])
    assert.ok(Date.now() - started < 10_000, `healthy after ${Date.now() - started} ms`)
    pids.push(...(await pidsOf(t)))

    // Tokens are issued once; the runtime restarts with them and turns healthy again.
    const issued = await t.client.post(`/v1/workers/${id}/tokens`, { token: org.owner.token })
    assert.is(issued.status, 201)
    assert.is(issued.body.item.worker.state, 'provisioning')
    const { client, host, activity } = issued.body.item.tokens
    await waitFor(
      () => t.client.get(`/v1/workers/${id}/runtime`, { token: org.member.token }),
      (r) => r.body.item.state === 'healthy' && r.body.item.url !== null,
      15_000,
      50,
    )
    const runtime = (await t.client.get(`/v1/workers/${id}/runtime`, { token: org.member.token })).body.item
    assert.ok(runtime.version, 'the runtime reported its version')
    assert.ok(runtime.lastHeartbeatAt)
    pids.push(...(await pidsOf(t)))
    const hostRead = await fetch(`${runtime.url}/tokens`, { headers: { 'x-service-host-token': host } })
    assert.is(hostRead.status, 200, 'the host token works against the runtime')
    const clientRead = await fetch(`${runtime.url}/workspaces`, { headers: { authorization: `Bearer ${client}` } })
    assert.is(clientRead.status, 200, 'the client token works against the runtime')
    assert.is(
      (await fetch(`${runtime.url}/tokens`, { headers: { 'x-service-host-token': client } })).status,
      401,
      'the client token is not a host token',
    )
    const listed = await t.client.get(`/v1/workers/${id}/tokens`, { token: org.owner.token })
    assert.equal(
      listed.body.items
        .filter((tk: { revokedAt: string | null }) => tk.revokedAt === null)
        .map((tk: { scope: string }) => tk.scope)
        .sort(),
      ['activity', 'client', 'host'],
    )
    assert.not.ok(JSON.stringify(listed.body).includes(host), 'token values are never listed')
    const dbText =
      JSON.stringify(await t.app.deps.db.selectFrom('worker_token').selectAll().execute()) +
      JSON.stringify(await t.app.deps.db.selectFrom('worker').selectAll().execute())
    assert.not.ok(
      dbText.includes(host) || dbText.includes(activity) || dbText.includes(client),
      'no token in plaintext at rest',
    )

    // Kill the runtime: after the staleness window the Worker is unreachable, with the exit kept.
    const [pid] = await pidsOf(t)
    process.kill(pid!, 'SIGKILL')
    const gone = await waitFor(
      () => t.client.get(`/v1/workers/${id}/runtime`, { token: org.owner.token }),
      (r) => r.body.item.state === 'unreachable',
      10_000,
      50,
    )
    assert.equal([gone.body.item.state, gone.body.item.stateReason], ['unreachable', 'heartbeat_stale'])
    assert.is(gone.body.item.lastError.reason, 'process_exited')
    assert.match(gone.body.item.lastError.message, /SIGKILL/)

    const deleted = await t.client.delete(`/v1/workers/${id}`, { token: org.admin.token })
    assert.is(deleted.status, 204)
    assert.is((await t.client.get(`/v1/workers/${id}`, { token: org.admin.token })).status, 404)
  } finally {
    pids.push(...(await pidsOf(t).catch(() => [])))
    await t.close()
    await killAll(pids)
  }
})

test("heartbeats need the Worker's own activity token: another Worker's is 401", async () => {
  const t = await startAsyncTestPlane({ listen: true })
  try {
    const org = await buildFixtureOrg(t.client, 'hb')
    const a = (
      await t.client.post('/v1/workers', { token: org.owner.token, json: { name: 'a', provisioner: 'process' } })
    ).body.item.id
    const b = (
      await t.client.post('/v1/workers', { token: org.owner.token, json: { name: 'b', provisioner: 'process' } })
    ).body.item.id
    const tokensA = (await t.client.post(`/v1/workers/${a}/tokens`, { token: org.owner.token })).body.item.tokens
    const tokensB = (await t.client.post(`/v1/workers/${b}/tokens`, { token: org.owner.token })).body.item.tokens
    const beat = (worker: string, token?: string) =>
      t.client.post(`/v1/workers/${worker}/heartbeat`, {
        json: { openSessionCount: 2 },
        ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
      })
    assert.is((await beat(a, tokensB.activity)).status, 401)
    assert.is((await beat(a, tokensA.host)).status, 401, 'a host token is not an activity token')
    assert.is((await beat(a)).status, 401)
    assert.is((await beat(a, org.owner.token)).status, 401, 'a session is not a Worker credential')
    const ok = await beat(a, tokensA.activity)
    assert.is(ok.status, 200)
    // Healthy once both a heartbeat arrived and the runtime's URL is recorded, in either order.
    const healthy = await waitFor(
      () => t.client.get(`/v1/workers/${a}/runtime`, { token: org.owner.token }),
      (r) => r.body.item.state === 'healthy',
      30_000,
      50,
    )
    assert.match(healthy.body.item.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.is((await beat(b, tokensB.activity)).status, 200)
    // Revoking the set stops the runtime and the old activity token.
    assert.is((await t.client.delete(`/v1/workers/${a}/tokens`, { token: org.owner.token })).status, 204)
    assert.is((await beat(a, tokensA.activity)).status, 401)
    const stopped = await t.client.get(`/v1/workers/${a}`, { token: org.owner.token })
    assert.equal([stopped.body.item.state, stopped.body.item.stateReason], ['stopped', 'tokens_revoked'])
  } finally {
    const pids = await pidsOf(t).catch(() => [])
    await t.close()
    await killAll(pids)
  }
})

test('a runtime that never reports fails at the provisioning deadline with that reason', async () => {
  // Runtimes report to a port nothing listens on, so no heartbeat ever arrives.
  const t = await startAsyncTestPlane({
    file: { workers: { publicUrl: 'http://127.0.0.1:9', provisioningDeadlineMs: 2500 } },
  })
  try {
    const org = await buildFixtureOrg(t.client, 'dl')
    const id = (
      await t.client.post('/v1/workers', { token: org.owner.token, json: { name: 'silent', provisioner: 'process' } })
    ).body.item.id
    const done = await waitFor(
      () => t.client.get(`/v1/workers/${id}`, { token: org.owner.token }),
      (r) => r.body.item.state !== 'provisioning',
      10_000,
      50,
    )
    assert.equal([done.body.item.state, done.body.item.stateReason], ['failed', 'provisioning_deadline_exceeded'])
    assert.match(done.body.item.stateMessage, /2500 ms/)
    const pids = await pidsOf(t)
    await waitFor(
      async () => pids.filter(alive).length,
      (n) => n === 0,
      5000,
    )
    assert.equal(pids.filter(alive), [], 'the runtime was stopped')
    // The change feed carries the Worker's creation and its move to failed, with the reason.
    const feed = await t.client.get('/v1/events?after=0&limit=100', { token: org.member.token })
    const forWorker = (feed.body.items as Array<{ kind: string; subject: { id: string } | null; data: any }>).filter(
      (e) => e.subject?.id === id,
    )
    assert.equal(
      forWorker.map((e) => e.kind),
      ['worker.created', 'worker.state_changed'],
    )
    assert.equal(forWorker[1]!.data, { state: 'failed', reason: 'provisioning_deadline_exceeded' })
  } finally {
    const pids = await pidsOf(t).catch(() => [])
    await t.close()
    await killAll(pids)
  }
})

test('GET /v1/workers takes limit 1 to 50 and pages newest first; other ids are 404; bad provisioners are 422', async () => {
  const t = await startAsyncTestPlane({ file: { workers: { publicUrl: 'http://127.0.0.1:9' } } })
  try {
    const org = await buildFixtureOrg(t.client, 'lim')
    const other = await buildFixtureOrg(t.client, 'lim-other')
    for (const bad of ['0', '51', 'abc', '-1', '1.5']) {
      const res = await t.client.get(`/v1/workers?limit=${bad}`, { token: org.owner.token })
      assert.is(res.status, 422, `limit=${bad}`)
      assert.is(res.body.details.issues[0].path, 'limit')
    }
    assert.is((await t.client.get('/v1/workers?limit=50', { token: org.owner.token })).status, 200)
    const empty = await t.client.get('/v1/workers', { token: org.member.token })
    assert.equal(empty.body, { items: [], nextCursor: null })
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push(
        (
          await t.client.post('/v1/workers', {
            token: org.owner.token,
            json: { name: `w${i}`, provisioner: 'process' },
          })
        ).body.item.id,
      )
    }
    const page1 = await t.client.get('/v1/workers?limit=2', { token: org.member.token })
    const page2 = await t.client.get(`/v1/workers?limit=2&cursor=${page1.body.nextCursor}`, { token: org.member.token })
    assert.equal(
      [...page1.body.items, ...page2.body.items].map((w: { id: string }) => w.id),
      [...ids].reverse(),
    )
    assert.is(page2.body.nextCursor, null)
    assert.is((await t.client.get(`/v1/workers/${ids[0]}`, { token: other.owner.token })).status, 404)
    assert.is((await t.client.delete(`/v1/workers/${ids[0]}`, { token: other.owner.token })).status, 404)
    assert.is((await t.client.post(`/v1/workers/${ids[0]}/tokens`, { token: other.owner.token })).status, 404)
    assert.is((await t.client.get(`/v1/workers/${ids[0]}/runtime`, { token: other.owner.token })).status, 404)
    const bad = await t.client.post('/v1/workers', {
      token: org.owner.token,
      json: { name: 'x', provisioner: 'kubernetes' },
    })
    assert.equal([bad.status, bad.body.details.issues[0].path], [422, 'provisioner'])
    assert.is(
      (await t.client.post('/v1/workers', { token: org.member.token, json: { name: 'x', provisioner: 'process' } }))
        .status,
      403,
    )
  } finally {
    const pids = await pidsOf(t).catch(() => [])
    await t.close()
    await killAll(pids)
  }
})

test.run()
