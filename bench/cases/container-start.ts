/**
 * Issue 35 §4: time from `POST /v1/workers` to the Worker's `healthy` (its first heartbeat
 * recorded), with the `container` provisioner ÷ with `process`, in one run on one control plane.
 *
 * The control plane is the compiled binary (so `process` Workers run the compiled binary too, as
 * the container's image does), on SQLite, as a child process; the engine is Podman's
 * Docker-compatible service on a socket of the bench's own (runc, own storage), with the image
 * `npm run image` builds loaded once before timing. Rounds alternate process and container
 * Workers; each Worker is deleted after its round. No target: the figure says what isolation
 * costs at start. Optional (needs podman and runc); on this shared machine it is indicative only.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startAsyncTestPlane } from '../../src/control-plane/testing/async-test-kit.ts'
import { contractClient, forwardTo } from '../../src/control-plane/testing/contract-client.ts'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { podmanAvailable, startTestEngine } from '../../src/control-plane/workers/container/podman-test-engine.ts'
import { startChild } from '../../tests/harness.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure, type RoundPair } from '../lib/figure.ts'

async function run(ctx: BenchContext): Promise<void> {
  if (!podmanAvailable()) {
    ctx.skip('container start', 'podman and runc are not installed')
    return
  }
  const bin = await ctx.productBinary()
  if (!bin) return
  const dir = ctx.tempDir('bench-container-')
  const podman = await startTestEngine(join(dir, 'engine'))
  let child: Awaited<ReturnType<typeof startChild>> | null = null
  try {
    const image = await podman.loadImage(bin)
    const config = join(dir, 'cp.json')
    writeFileSync(
      config,
      JSON.stringify({
        logRequests: false,
        openSignUp: true,
        jobs: { pollIntervalMs: 10 },
        workers: { heartbeatIntervalMs: 1000, sweepIntervalMs: 100, container: { image, checkIntervalMs: 1000 } },
      }),
    )
    const server = await startChild(
      bin,
      ['--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
      { cwd: dir, env: { HOME: dir, SERVICE_WORKERS_CONTAINER_ENGINE: podman.url }, timeoutMs: 30_000 },
    )
    child = server
    const contract = await startAsyncTestPlane()
    const client = contractClient({
      contract: contract.app.contract,
      fetch: forwardTo(() => server.url),
    })
    await contract.close()
    const org = await buildFixtureOrg(client, 'bench')
    const token = org.owner.token
    const timeToHealthy = async (provisioner: string, n: number): Promise<number> => {
      const started = performance.now()
      const created = await client.post('/v1/workers', { token, json: { name: `${provisioner}-${n}`, provisioner } })
      if (created.status !== 202) throw new Error(`POST /v1/workers answered ${created.status}`)
      const id = created.body.item.id as string
      for (;;) {
        const state = (await client.get(`/v1/workers/${id}`, { token })).body.item.state
        if (state === 'healthy') break
        if (state === 'failed') throw new Error(`the ${provisioner} Worker failed`)
        if (performance.now() - started > 60_000) throw new Error(`the ${provisioner} Worker did not turn healthy`)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const ms = performance.now() - started
      await client.delete(`/v1/workers/${id}`, { token })
      return ms
    }
    // The floor: the engine creating and starting a container of the same image, confined the
    // same way, until its /health answers; no control plane, volume, credentials or heartbeat.
    const bareContainer = async (n: number): Promise<number> => {
      const port = 20_000 + ((process.pid + n) % 20_000)
      const started = performance.now()
      const created = await podman.engine.json<{ Id: string }>('POST', `/containers/create?name=bench-floor-${n}`, {
        Image: image,
        User: '65534:65534',
        Cmd: ['--mode', 'workspace', '--host', '127.0.0.1', '--port', String(port), '--data-dir', '/tmp/data'],
        Env: ['HOME=/tmp', 'TMPDIR=/tmp', 'SERVICE_TOKEN=bench-floor-token-0123456789abcdef'],
        HostConfig: {
          NetworkMode: 'host',
          ReadonlyRootfs: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Ulimits: [
            { Name: 'nofile', Soft: 1024, Hard: 1024 },
            { Name: 'nproc', Soft: 1024, Hard: 1024 },
          ],
          Tmpfs: { '/tmp': 'rw,nosuid,size=64m' },
        },
      })
      const id = created.value!.Id
      await podman.engine.json('POST', `/containers/${id}/start`)
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/health`)
          .then((r) => r.status === 200)
          .catch(() => false)
        if (ok) break
        if (performance.now() - started > 60_000) throw new Error('the bare container did not answer /health')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      const ms = performance.now() - started
      await podman.engine.json('DELETE', `/containers/${id}?force=true`)
      return ms
    }
    await timeToHealthy('container', 0) // first container start warms the engine's storage
    await bareContainer(0)
    const rounds: RoundPair[] = []
    const floorRounds: RoundPair[] = []
    const count = Math.max(1, Math.min(ctx.settings.rounds, 3))
    for (let i = 1; i <= count; i++) {
      const baseline = await timeToHealthy('process', i)
      const ours = await timeToHealthy('container', i)
      const floor = await bareContainer(i)
      ctx.log(
        `round ${i}: process ${baseline.toFixed(0)} ms, container ${ours.toFixed(0)} ms, bare container ${floor.toFixed(0)} ms`,
      )
      rounds.push({ baseline, ours })
      floorRounds.push({ baseline: floor, ours })
    }
    ctx.record(
      makeFigure({
        caseName: 'container-start',
        name: 'POST /v1/workers → healthy, over the engine floor',
        unit: 'ms',
        subject: 'container provisioner (Podman 4.3 + runc, host network)',
        baselineLabel: 'the engine starting the same image until /health answers',
        rounds: floorRounds,
        notes: ['what the control plane adds to the engine: job, volume, credential files, first heartbeat'],
      }),
    )
    ctx.record(
      makeFigure({
        caseName: 'container-start',
        name: 'POST /v1/workers → healthy',
        unit: 'ms',
        subject: 'container provisioner (Podman 4.3 + runc, host network)',
        baselineLabel: 'process provisioner',
        rounds,
        notes: ['one control plane, alternating rounds; shared 2-core machine: indicative only'],
      }),
    )
  } finally {
    if (child) await child.stop().catch(() => {})
    await podman.close()
  }
}

export default defineCase({
  name: 'container-start',
  description: 'POST /v1/workers → healthy, container ÷ process (issue 35 §4); needs podman',
  optional: true,
  run,
})
