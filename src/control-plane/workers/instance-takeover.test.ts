/**
 * Several control planes on one database: two processes share one SQLite file. The runtime of a
 * Worker belongs to the instance that started it; when that instance dies (SIGKILL), the other
 * notices through the instance heartbeat sweep, stops the orphaned runtime (same host) and leaves
 * the Worker `unreachable` with reason `control_plane_instance_lost`; a new token set then starts
 * it under the survivor. The sweep's transitions are conditional, so two instances sweeping at
 * once act on a lost instance once.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, startChild, suite, withTempDir, type ChildServer } from '../../../tests/harness.ts'
import { silentLogger } from '../../core/logger.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import { startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from '../testing/test-database.ts'
import { ControlPlaneInstance } from './control-plane-instance.ts'
import { sweepLostInstances } from './runtime-ownership.ts'

const test = suite('control-plane/instance-takeover', { timeoutMs: 90_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')

function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** Live runtime processes of a Worker, with the pid of the process that started each. */
function runtimesOf(workerId: string): Array<{ pid: number; parent: number }> {
  const found: Array<{ pid: number; parent: number }> = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'utf8').includes(`SERVICE_WORKER_ID=${workerId}\0`)) continue
      if (!running(Number(name))) continue
      const parent = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${name}/status`, 'utf8'))?.[1])
      found.push({ pid: Number(name), parent })
    } catch {
      // gone meanwhile
    }
  }
  return found
}

test('when the control plane that runs a Worker dies, the other instance on the same database stops its runtime and leaves the Worker unreachable with the reason; new tokens start it there', async () => {
  await withTempDir(async (dir) => {
    const config = join(dir, 'cp.json')
    // On the PostgreSQL pass both processes share one fresh PostgreSQL database instead of the file.
    const databaseUrl = TEST_ENGINE === 'postgres' ? await testDatabaseUrl(dir) : undefined
    writeFileSync(
      config,
      JSON.stringify({
        ...(databaseUrl ? { databaseUrl } : {}),
        logRequests: false,
        openSignUp: true,
        jobs: { pollIntervalMs: 20 },
        workers: {
          heartbeatIntervalMs: 200,
          staleAfterMs: 1500,
          sweepIntervalMs: 100,
          instanceHeartbeatMs: 200,
          instanceStaleAfterMs: 1000,
          runtimeCheckIntervalMs: 100,
        },
      }),
    )
    const start = () =>
      startChild(
        BUN,
        [ENTRY, '--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
        { cwd: dir, env: { HOME: dir }, timeoutMs: 30_000 },
      )
    const planes: ChildServer[] = []
    const leftovers: number[] = []
    try {
      // One after the other: the first creates and migrates the shared database file.
      planes.push(await start())
      planes.push(await start())
      let token = ''
      const call = async (plane: ChildServer, method: string, path: string, body?: unknown) => {
        const res = await fetch(`${plane.url}${path}`, {
          method,
          headers: {
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(body ? { 'content-type': 'application/json' } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        })
        const text = await res.text()
        return { status: res.status, body: text ? JSON.parse(text) : null }
      }
      const [a, b] = planes as [ChildServer, ChildServer]
      const up = await call(a, 'POST', '/v1/auth/sign-up', {
        email: 'owner@takeover.test',
        password: 'pw-takeover-long-secret',
        name: 'owner',
      })
      assert.is(up.status, 201)
      token = up.body.session.token
      assert.is((await call(b, 'POST', '/v1/orgs', { name: 'Takeover' })).status, 201)
      const created = await call(a, 'POST', '/v1/workers', { name: 'w', provisioner: 'process' })
      assert.is(created.status, 202)
      const id: string = created.body.item.id
      const healthy = await waitFor(
        () => call(b, 'GET', `/v1/workers/${id}`),
        (r) => r.body.item.state !== 'provisioning',
        20_000,
        50,
      )
      assert.is(healthy.body.item.state, 'healthy')

      const [runtime] = runtimesOf(id)
      assert.ok(runtime, 'the runtime runs')
      leftovers.push(runtime!.pid)
      const owner = planes.find((p) => p.process.pid === runtime!.parent)
      assert.ok(owner, 'one of the two control planes started it')
      const survivor = owner === a ? b : a
      owner!.process.kill('SIGKILL')
      await owner!.stop()
      // SIGKILL leaves the runtime running; the survivor, on the same host, is what stops it.

      const lost = await waitFor(
        () => call(survivor, 'GET', `/v1/workers/${id}/runtime`),
        (r) => r.body.item.stateReason === 'control_plane_instance_lost',
        10_000,
        50,
      )
      assert.equal(
        [lost.body.item.state, lost.body.item.stateReason, lost.body.item.lastError?.reason],
        ['unreachable', 'control_plane_instance_lost', 'control_plane_instance_lost'],
      )
      const stopped = await waitFor(
        async () => running(runtime!.pid),
        (alive) => !alive,
        5000,
        25,
      )
      assert.not.ok(stopped, 'the survivor stopped the orphaned runtime on this host')

      // Not stuck: a new token set starts the Worker under the surviving instance.
      const issued = await call(survivor, 'POST', `/v1/workers/${id}/tokens`)
      assert.is(issued.status, 201)
      const back = await waitFor(
        () => call(survivor, 'GET', `/v1/workers/${id}`),
        (r) => r.body.item.state !== 'provisioning',
        20_000,
        50,
      )
      assert.is(back.body.item.state, 'healthy')
      const now = runtimesOf(id)
      leftovers.push(...now.map((r) => r.pid))
      assert.equal(
        now.map((r) => r.parent),
        [survivor.process.pid],
      )
    } finally {
      for (const plane of planes) await plane.stop('SIGTERM')
      if (databaseUrl) await dropTestDatabase(dir)
      for (const pid of leftovers) {
        if (!running(pid) || !readFileSync(`/proc/${pid}/environ`, 'utf8').includes(dir)) continue
        process.kill(pid, 'SIGKILL')
      }
    }
  })
})

test('two instances sweeping at once act on a lost instance once: its Workers end unreachable with the reason, a runtime on another host stays on record', async () => {
  // Automatic sweeps run once at start and then not again during the test: the two sweeps below
  // are the only ones, started together.
  const quiet = { workers: { sweepIntervalMs: 3_600_000 } }
  const first = await startAsyncTestPlane({ file: quiet })
  // On PostgreSQL a second control plane with its own pool. On SQLite the two instances share the
  // first plane's connection: two connections to one file in one process deadlock (SQLite's busy
  // wait blocks the only thread while the other connection's transaction waits for it).
  const second = TEST_ENGINE === 'postgres' ? await startAsyncTestPlane({ file: quiet, dir: first.dir }) : first
  const contexts = [first, second].map((plane) => {
    const instance = new ControlPlaneInstance({
      db: plane.app.deps.db,
      now: Date.now,
      settings: { heartbeatMs: 60_000, staleAfterMs: 120_000 },
      logger: silentLogger,
    })
    return { deps: plane.app.deps, instance, provisioners: new Map(), log: silentLogger } as unknown as AsyncContext
  })
  try {
    for (const ctx of contexts) await ctx.instance.register()
    const org = await buildFixtureOrg(first.client, 'sweep')
    const db = first.app.deps.db
    const old = new Date(Date.now() - 10 * 60_000).toISOString()
    await db
      .insertInto('control_plane_instance')
      .values({
        id: 'cpi_lost',
        host: 'elsewhere.invalid',
        pid: 4242,
        started_at: old,
        heartbeat_at: old,
        stopped_at: null,
      })
      .execute()
    const ids: string[] = []
    for (const name of ['one', 'two']) {
      const created = await first.client.post('/v1/workers', {
        token: org.owner.token,
        json: { name, provisioner: 'process' },
      })
      ids.push(created.body.item.id)
    }
    // As if instance cpi_lost on another host had started both runtimes and then vanished.
    await db.updateTable('job').set({ status: 'canceled' }).where('subject_id', 'in', ids).execute()
    await db
      .updateTable('worker')
      .set({
        state: 'healthy',
        state_reason: 'heartbeat',
        runtime_instance_id: 'cpi_lost',
        runtime_host: 'elsewhere.invalid',
        runtime_pid: 4242,
        runtime_generation: 1,
        runtime_url: 'http://127.0.0.1:9',
        last_heartbeat_at: new Date().toISOString(),
      })
      .where('id', 'in', ids)
      .execute()

    const moved = await Promise.all(contexts.map((ctx) => sweepLostInstances(ctx)))
    assert.is(moved[0]! + moved[1]!, 2, `each Worker moved once (${moved.join(' + ')})`)
    const rows = await db
      .selectFrom('worker')
      .select(['state', 'state_reason', 'runtime_instance_id', 'runtime_host', 'runtime_pid', 'runtime_url'])
      .where('id', 'in', ids)
      .execute()
    assert.equal(
      rows.map((r) => [r.state, r.state_reason, r.runtime_instance_id, r.runtime_host, r.runtime_pid, r.runtime_url]),
      [
        ['unreachable', 'control_plane_instance_lost', null, 'elsewhere.invalid', 4242, null],
        ['unreachable', 'control_plane_instance_lost', null, 'elsewhere.invalid', 4242, null],
      ],
    )
    const lost = await db
      .selectFrom('control_plane_instance')
      .selectAll()
      .where('id', '=', 'cpi_lost')
      .executeTakeFirst()
    assert.ok(lost?.stopped_at, 'the lost instance is recorded as stopped')
    // Sweeping again changes nothing.
    assert.equal(await Promise.all(contexts.map((ctx) => sweepLostInstances(ctx))), [0, 0])
  } finally {
    for (const ctx of contexts) await ctx.instance.stop().catch(() => {})
    if (second !== first) await second.close()
    await first.close()
  }
})

test.run()
