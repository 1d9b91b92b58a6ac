/**
 * Runtimes outlive a crashed control plane (SIGKILL leaves children running). A restart on the
 * same host finds them through the pids recorded in the database (recognised by their Worker id),
 * stops them and provisions the Workers again; a delete stops the runtime and waits for it; a
 * graceful stop of the control plane stops the runtimes it started, and its next start restarts
 * them.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, startChild, suite, withTempDir, type ChildServer } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { contractClient, forwardTo } from '../testing/contract-client.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/orphan-runtime', { timeoutMs: 60_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')

/** Running (a zombie waiting for a reaper that may never come in a container counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return true
  }
}

test('a runtime orphaned by a control-plane crash is stopped when its Worker is deleted after restart; a graceful stop stops runtimes and the next start restarts them', async () => {
  await withTempDir(async (dir) => {
    const config = join(dir, 'cp.json')
    writeFileSync(
      config,
      JSON.stringify({
        logRequests: false,
        openSignUp: true,
        jobs: { pollIntervalMs: 20 },
        workers: { heartbeatIntervalMs: 200, staleAfterMs: 1000, sweepIntervalMs: 50 },
      }),
    )
    const start = () =>
      startChild(
        BUN,
        [ENTRY, '--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
        { cwd: dir, env: { HOME: dir } },
      )
    const contract = await startAsyncTestPlane()
    const pids: number[] = []
    let child: ChildServer | null = await start()
    let current = child
    const client = contractClient({
      contract: contract.app.contract,
      fetch: forwardTo(() => current.url),
    })
    try {
      const org = await buildFixtureOrg(client, 'orphan')
      const token = org.owner.token
      const ids: string[] = []
      for (const name of ['first', 'second'])
        ids.push((await client.post('/v1/workers', { token, json: { name, provisioner: 'process' } })).body.item.id)
      for (const id of ids) {
        const ready = await waitFor(
          () => client.get(`/v1/workers/${id}`, { token }),
          (r) => r.body.item.state !== 'provisioning',
          15_000,
          50,
        )
        assert.is(ready.body.item.state, 'healthy')
      }
      // The pid file is written just after the runtime listens, so it may trail the first heartbeat.
      const pidOf = async (id: string) =>
        Number(
          await waitFor(
            async () => {
              try {
                return readFileSync(join(dir, 'data', 'workers', id, 'runtime.pid'), 'utf8')
              } catch {
                return ''
              }
            },
            (text) => text !== '',
            5000,
            20,
          ),
        )
      const [first, second] = [await pidOf(ids[0]!), await pidOf(ids[1]!)]
      pids.push(first, second)
      child.process.kill('SIGKILL')
      await child.stop()
      child = null
      assert.ok(alive(first) && alive(second), 'runtimes outlive the crashed control plane')

      // The restarted control plane finds both runtimes through the pids recorded in the database,
      // stops them, and starts each Worker again under its own ownership.
      child = await start()
      current = child
      for (const id of ids) {
        const back = await waitFor(
          () => client.get(`/v1/workers/${id}`, { token }),
          (r) => r.body.item.state === 'healthy' && r.body.item.stateReason === 'heartbeat',
          15_000,
          50,
        )
        assert.is(back.body.item.state, 'healthy')
      }
      assert.not.ok(alive(first) || alive(second), 'the orphaned runtimes were stopped at start')
      // Its output outlived the crashed control plane: the orphan's own last lines (written while
      // the restarted one stopped it) sit between the two starts in the Worker's logs.
      const logs = await client.get(`/v1/workers/${ids[1]}/logs?tail=1000`, { token })
      assert.is(logs.status, 200)
      const lines: string[] = logs.body.lines
      const starts = lines.flatMap((line, i) => (line.includes('control plane: starting the runtime') ? [i] : []))
      assert.is(starts.length, 2, lines.join('\n'))
      const orphanStop = lines.findIndex((line) => /stopping/.test(line) && /SIGTERM/.test(line))
      assert.ok(orphanStop > starts[0]! && orphanStop < starts[1]!, lines.join('\n'))
      const restarted = await waitFor(
        async () => [await pidOf(ids[0]!), await pidOf(ids[1]!)],
        ([a, b]) => a !== first && b !== second,
        5000,
        20,
      )
      pids.push(...restarted)
      assert.ok(restarted.every(alive), 'new runtimes serve the Workers')
      assert.is((await client.delete(`/v1/workers/${ids[0]}`, { token })).status, 204)
      assert.not.ok(alive(restarted[0]!), 'the delete stopped the runtime and waited for it')
      assert.ok(alive(restarted[1]!), 'the other runtime is untouched')

      // A runtime started by this control plane stops with it.
      const third = (await client.post('/v1/workers', { token, json: { name: 'third', provisioner: 'process' } })).body
        .item.id
      await waitFor(
        () => client.get(`/v1/workers/${third}`, { token }),
        (r) => r.body.item.state !== 'provisioning',
        15_000,
        50,
      )
      const thirdPid = await pidOf(third)
      pids.push(thirdPid)
      assert.is(await child.stop('SIGTERM'), 0)
      child = null
      assert.not.ok(alive(thirdPid), 'a graceful stop stops the runtimes it started')

      // ...and the next start brings them back with the same tokens.
      child = await start()
      current = child
      const back = await waitFor(
        () => client.get(`/v1/workers/${third}`, { token }),
        (r) => r.body.item.state === 'healthy',
        15_000,
        50,
      )
      assert.is(back.body.item.state, 'healthy')
      const restartedPid = await pidOf(third)
      pids.push(restartedPid)
      assert.ok(restartedPid !== thirdPid && alive(restartedPid), 'a new runtime process serves the Worker')
    } finally {
      if (child) await child.stop('SIGTERM')
      const workersDir = join(dir, 'data', 'workers')
      for (const id of existsSync(workersDir) ? readdirSync(workersDir) : []) {
        try {
          pids.push(Number(readFileSync(join(workersDir, id, 'runtime.pid'), 'utf8')))
        } catch {
          // no runtime recorded
        }
      }
      // Only runtimes of this test (recognised by their environment), never a reused pid.
      const ours = (pid: number) => {
        try {
          return (
            readFileSync(`/proc/${pid}/environ`, 'utf8').includes('SERVICE_WORKER_ID=wrk_') &&
            readFileSync(`/proc/${pid}/environ`, 'utf8').includes(dir)
          )
        } catch {
          return false
        }
      }
      for (const pid of pids) if (alive(pid) && ours(pid)) process.kill(pid, 'SIGKILL')
      await contract.close()
    }
  })
})

test.run()
