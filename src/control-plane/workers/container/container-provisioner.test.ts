/**
 * The `container` provisioner against a real engine: Podman's Docker-compatible service on a
 * socket of this test's own (own storage, runc), the image `npm run image` builds, and a control
 * plane run as a child process so it can be SIGKILLed. Skipped where podman is not installed.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  assert,
  BUN,
  compiledBinary,
  startChild,
  suite,
  withTempDir,
  type ChildServer,
} from '../../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor } from '../../testing/async-test-kit.ts'
import { contractClient, forwardTo } from '../../testing/contract-client.ts'
import { buildFixtureOrg } from '../../testing/org-fixture.ts'
import { LABELS, volumeName } from './container-provisioner.ts'
import { podmanAvailable, startTestEngine, workerLabel } from './podman-test-engine.ts'

const test = suite('control-plane/container-provisioner', { timeoutMs: 240_000 })
const ENTRY = resolve(
  import.meta.dirname ?? new URL('.', import.meta.url).pathname,
  '../../../../bin/service-server.ts',
)
const SKILL = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\nDo ${name}.\n`

test('a container Worker turns healthy from inside its container, rotates, follows its delivery, survives a control-plane SIGKILL without a second container, marks an unreachable engine, and leaves nothing behind on delete', async () => {
  if (!podmanAvailable()) {
    console.log('  (skipped: podman and runc are not installed)')
    return
  }
  await withTempDir(async (dir) => {
    const podman = await startTestEngine(join(dir, 'engine'))
    let child: ChildServer | null = null
    try {
      const image = await podman.loadImage(await compiledBinary())
      const config = join(dir, 'cp.json')
      writeFileSync(
        config,
        JSON.stringify({
          logRequests: false,
          openSignUp: true,
          jobs: { pollIntervalMs: 20, retryBaseMs: 200, retryCapMs: 1000 },
          workers: {
            heartbeatIntervalMs: 300,
            staleAfterMs: 5000,
            sweepIntervalMs: 100,
            instanceHeartbeatMs: 200,
            instanceStaleAfterMs: 1000,
            maxAttempts: 20,
            container: { image, memoryMb: 512, pidsLimit: 256, checkIntervalMs: 200 },
          },
        }),
      )
      const start = () =>
        startChild(
          BUN,
          [ENTRY, '--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
          { cwd: dir, env: { HOME: dir, SERVICE_WORKERS_CONTAINER_ENGINE: podman.url }, timeoutMs: 30_000 },
        )
      const contract = await startAsyncTestPlane()
      child = await start()
      let current = child
      const client = contractClient({
        contract: contract.app.contract,
        fetch: forwardTo(() => current.url),
      })
      const org = await buildFixtureOrg(client, 'ctr')
      const owner = org.owner.token
      const runtimeOf = (id: string) => client.get(`/v1/workers/${id}/runtime`, { token: owner })
      const healthyAt = (id: string, notUrl?: string) =>
        waitFor(
          () => runtimeOf(id),
          (r) => r.body.item.state === 'healthy' && r.body.item.url !== null && r.body.item.url !== notUrl,
          60_000,
          100,
        )

      // Create: one container, labelled, confined, whose heartbeats make the Worker healthy.
      const created = await client.post('/v1/workers', {
        token: owner,
        json: { name: 'boxed', provisioner: 'container' },
      })
      assert.is(created.status, 202, JSON.stringify(created.body))
      const id: string = created.body.item.id
      const issued = await client.post(`/v1/workers/${id}/tokens`, { token: owner })
      assert.is(issued.status, 201)
      const first = issued.body.item.tokens
      const ready = await healthyAt(id)
      let containers = await podman.containers(workerLabel(id))
      assert.is(containers.length, 1, 'one container for the Worker')
      const [box] = containers
      assert.is(box!.State, 'running')
      assert.ok(box!.Labels[LABELS.instance]?.startsWith('cpi_'), 'labelled with the owning instance')
      const inspect = (await podman.engine.json<Record<string, any>>('GET', `/containers/${box!.Id}/json`)).value!
      assert.ok(inspect.HostConfig.ReadonlyRootfs, 'read-only root filesystem')
      assert.equal(
        inspect.HostConfig.CapDrop.map((c: string) => c.replace(/^CAP_/, '')).includes('ALL') ||
          inspect.HostConfig.CapDrop.length > 10,
        true,
      )
      assert.ok(JSON.stringify(inspect.HostConfig.SecurityOpt).includes('no-new-privileges'))
      assert.is(inspect.HostConfig.Memory, 512 * 1024 * 1024)
      assert.is(inspect.HostConfig.PidsLimit, 256)
      assert.is(inspect.Config.User, '65534:65534')
      const shown = JSON.stringify(inspect)
      assert.not.ok(
        shown.includes(first.client) || shown.includes(first.host) || shown.includes(first.activity),
        'no token appears in inspect output',
      )
      const url: string = ready.body.item.url
      assert.is(
        (await fetch(`${url}/workspaces`, { headers: { authorization: `Bearer ${first.client}` } })).status,
        200,
      )
      assert.is((await fetch(`${url}/tokens`, { headers: { 'x-service-host-token': first.host } })).status, 200)

      // Rotation answers only once the old container is gone; the new one takes only the new tokens.
      const generation = Number(box!.Labels[LABELS.generation])
      const rotated = await client.post(`/v1/workers/${id}/tokens`, { token: owner })
      assert.is(rotated.status, 201)
      const running = (await podman.containers(workerLabel(id))).filter((c) => c.State === 'running')
      assert.not.ok(
        running.some((c) => c.Id === box!.Id),
        'the old container stopped before the rotation answered',
      )
      const second = rotated.body.item.tokens
      const again = await healthyAt(id, url)
      containers = await podman.containers(workerLabel(id))
      assert.is(containers.length, 1)
      assert.is(containers[0]!.Labels[LABELS.generation], String(generation + 1))
      const url2: string = again.body.item.url
      assert.is(
        (await fetch(`${url2}/workspaces`, { headers: { authorization: `Bearer ${second.client}` } })).status,
        200,
      )
      assert.is(
        (await fetch(`${url2}/workspaces`, { headers: { authorization: `Bearer ${first.client}` } })).status,
        401,
      )

      // Delivery: the hub's skill lands in the Worker's workspace volume.
      const skill = (await client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('triage') } })).body.item.id
      const hub = (await client.post('/v1/skill-hubs', { token: owner, json: { name: 'Ops' } })).body.item.id
      await client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill } })
      const set = await client.put(`/v1/workers/${id}/delivery`, {
        token: owner,
        json: { hubIds: [hub], pluginIds: [], llmProviderIds: [] },
      })
      assert.is(set.status, 200)
      const volume = (await podman.engine.json<{ Mountpoint: string }>('GET', `/volumes/${volumeName(id)}`)).value!
      const skillFile = join(volume.Mountpoint, 'workspace', '.opencode', 'skills', 'triage', 'SKILL.md')
      await waitFor(async () => existsSync(skillFile), Boolean, 20_000, 100)
      assert.match(readFileSync(skillFile, 'utf8'), /Do triage/)

      // SIGKILL of the control plane: the container outlives it; the restarted control plane
      // replaces it (found by label), and there are never two.
      child.process.kill('SIGKILL')
      await child.stop()
      child = null
      assert.is((await podman.containers(workerLabel(id))).filter((c) => c.State === 'running').length, 1)
      let most = 0
      let counting = true
      const counter = (async () => {
        while (counting) {
          const n = (await podman.containers(workerLabel(id))).filter((c) => c.State === 'running').length
          most = Math.max(most, n)
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      child = await start()
      current = child
      const back = await waitFor(
        () => runtimeOf(id),
        (r) => r.body.item.state === 'healthy' && r.body.item.url !== null && r.body.item.url !== url2,
        60_000,
        100,
      )
      counting = false
      await counter
      assert.ok(most <= 1, `at most one running container at any time (saw ${most})`)
      containers = await podman.containers(workerLabel(id))
      assert.is(containers.length, 1, 'the old container was removed')
      assert.is(
        (await fetch(`${back.body.item.url}/workspaces`, { headers: { authorization: `Bearer ${second.client}` } }))
          .status,
        200,
      )
      assert.ok(existsSync(skillFile), 'the workspace volume was kept')

      // The engine stops answering: the Worker turns unreachable with that reason, and healthy once it answers.
      await podman.stopService()
      const down = await waitFor(
        () => runtimeOf(id),
        (r) => r.body.item.state === 'unreachable',
        20_000,
        100,
      )
      assert.is(down.body.item.stateReason, 'engine_unreachable')
      assert.is(child.process.exitCode, null, 'the control plane keeps running')
      await podman.startService()
      const up = await waitFor(
        () => runtimeOf(id),
        (r) => r.body.item.state === 'healthy',
        60_000,
        100,
      )
      assert.is(up.body.item.state, 'healthy')

      // A graceful stop of the control plane stops its containers; its next start brings the Worker back.
      const gracefulUrl: string = up.body.item.url
      await child.stop('SIGTERM')
      child = null
      assert.is((await podman.containers(workerLabel(id))).length, 0, 'SIGTERM stopped the container')
      child = await start()
      current = child
      await healthyAt(id, gracefulUrl)
      assert.is((await podman.containers(workerLabel(id))).length, 1)

      // A container that dies on its own is reported as the Worker's last error (and removed).
      const [dying] = await podman.containers(workerLabel(id))
      await podman.engine.json('POST', `/containers/${dying!.Id}/kill?signal=KILL`)
      const exited = await waitFor(
        () => runtimeOf(id),
        (r) => r.body.item.lastError?.reason === 'container_exited',
        20_000,
        100,
      )
      assert.is(exited.body.item.url, null, 'the runtime URL is no longer handed out')
      await waitFor(
        () => podman.containers(workerLabel(id)),
        (list) => list.length === 0,
        10_000,
        100,
      )

      // Delete: the container and the volume are gone when it answers.
      const deleted = await client.delete(`/v1/workers/${id}`, { token: owner })
      assert.is(deleted.status, 204)
      assert.is((await podman.containers(workerLabel(id))).length, 0, 'no container left')
      const gone = await podman.engine.request('GET', `/volumes/${volumeName(id)}`)
      assert.is(gone.status, 404, 'the volume was removed')
    } finally {
      if (child) await child.stop('SIGKILL').catch(() => {})
      await podman.close()
    }
  })
})

test.run()
