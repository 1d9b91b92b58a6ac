/**
 * The `container` provisioner on its own against a real engine (Podman on a socket of the test's
 * own): the runtime's output through the engine's log API (frames demultiplexed, bounded, oldest
 * first), and an engine that cannot be reached failing a start with `engine_unreachable` instead
 * of throwing anything else; and a Worker on a network of its own (slirp4netns, port published on
 * 127.0.0.1) reaching the control plane's loopback address for its heartbeats. The frame parser
 * is checked on hand-made frames too.
 */
import { join } from 'node:path'
import { assert, compiledBinary, suite, withTempDir } from '../../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor } from '../../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../../testing/org-fixture.ts'
import { silentLogger } from '../../../core/logger.ts'
import { JobFailure } from '../../jobs/job-queue.ts'
import { type ContainerSettings, resolveAsyncSettings } from '../../jobs/async-settings.ts'
import { ContainerProvisioner } from './container-provisioner.ts'
import { containerSpec } from './container-spec.ts'
import { logLines } from './docker-engine.ts'
import { podmanAvailable, startTestEngine, workerLabel } from './podman-test-engine.ts'

const test = suite('control-plane/container-runtime', { timeoutMs: 180_000 })

const settings = (engine: string, image: string): ContainerSettings => ({
  engine,
  tls: null,
  image,
  network: 'host',
  memoryMb: 256,
  cpus: 0.5,
  pidsLimit: 128,
  checkIntervalMs: 60_000,
  controlPlaneUrl: null,
})

const request = (workerId: string) => ({
  workerId,
  orgId: 'org_x',
  name: 'logs',
  credentials: { client: 'c'.repeat(32), host: 'h'.repeat(32), activity: 'a'.repeat(32) },
  controlPlaneUrl: 'http://127.0.0.1:9',
  heartbeatIntervalMs: 60_000,
  generation: 1,
  signal: AbortSignal.timeout(60_000),
})

test('the container provisioner is offered only with an engine; env overrides the file; the spec confines the container and holds no token', () => {
  assert.is(resolveAsyncSettings({}, {}, '/data').workers.container, null)
  const resolved = resolveAsyncSettings(
    { workers: { container: { engine: 'unix:///a.sock', image: 'file/image', memoryMb: 256 } } },
    { SERVICE_WORKERS_CONTAINER_ENGINE: 'tcp://engine:2376', SERVICE_WORKERS_CONTAINER_IMAGE: 'env/image' },
    '/data',
  ).workers.container!
  assert.equal(
    [resolved.engine, resolved.image, resolved.memoryMb, resolved.network],
    ['tcp://engine:2376', 'env/image', 256, 'host'],
  )
  assert.throws(
    () => resolveAsyncSettings({}, { SERVICE_WORKERS_CONTAINER_ENGINE: '/no/scheme.sock' }, '/data'),
    /SERVICE_WORKERS_CONTAINER_ENGINE/,
  )
  const spec = containerSpec(resolved, request('wrk_spec'), { a: 'b' }) as Record<string, any>
  assert.equal(
    [spec.HostConfig.ReadonlyRootfs, spec.HostConfig.CapDrop, spec.HostConfig.SecurityOpt, spec.HostConfig.Memory],
    [true, ['ALL'], ['no-new-privileges'], 256 * 1024 * 1024],
  )
  assert.not.ok(JSON.stringify(spec).includes('a'.repeat(32)) || JSON.stringify(spec).includes('c'.repeat(32)))
  const slirp = containerSpec({ ...resolved, network: 'slirp4netns' }, request('wrk_spec'), {}) as Record<string, any>
  assert.ok(slirp.Env.includes('SERVICE_CONTROL_PLANE_URL=http://10.0.2.2:9'), 'loopback mapped to the slirp gateway')
})

test('log frames of stdout and stderr are demultiplexed in order; unframed (TTY) output is read as is', () => {
  const frame = (stream: number, text: string) => {
    const payload = Buffer.from(text)
    const header = Buffer.alloc(8)
    header[0] = stream
    header.writeUInt32BE(payload.length, 4)
    return Buffer.concat([header, payload])
  }
  const body = Buffer.concat([frame(1, 'one\ntw'), frame(2, 'o\nthree\n'), frame(1, 'four\n')])
  assert.equal(logLines(body), ['one', 'two', 'three', 'four'])
  assert.equal(logLines(Buffer.from('raw\r\nlines\n'), true), ['raw', 'lines'])
})

test('a container runtime reports its output through the engine, the last N lines with truncation marked; an unreachable engine is tried again until the attempt deadline, then fails the start as engine_unreachable', async () => {
  const unreachable = new ContainerProvisioner({
    settings: settings('unix:///nonexistent/podman.sock', 'none'),
    instanceId: 'cpi_none',
    logger: silentLogger,
  })
  const began = Date.now()
  const failure = await unreachable
    .start({ ...request('wrk_unreachable'), signal: AbortSignal.timeout(1200) })
    .catch((error) => error)
  assert.ok(Date.now() - began >= 1000, 'tried again until the attempt deadline')
  assert.ok(failure instanceof JobFailure, String(failure))
  assert.is((failure as JobFailure).reason, 'engine_unreachable')
  assert.ok((failure as JobFailure).retriable, 'retried with backoff')
  await unreachable.close()
  if (!podmanAvailable()) {
    console.log('  (engine part skipped: podman and runc are not installed)')
    return
  }
  await withTempDir(async (dir) => {
    const podman = await startTestEngine(join(dir, 'engine'))
    const provisioner = new ContainerProvisioner({
      settings: settings(podman.url, await podman.loadImage(await compiledBinary())),
      instanceId: 'cpi_logs',
      logger: silentLogger,
    })
    try {
      const runtime = await provisioner.start(request('wrk_logs'))
      assert.match(runtime.url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.is((await fetch(`${runtime.url}/health`)).status, 200)
      const all = await provisioner.logs('wrk_logs', 1000)
      assert.not.ok(all.truncated)
      assert.match(all.lines[0]!, /listening on http:\/\/127\.0\.0\.1:\d+/, 'oldest first')
      const last = await provisioner.logs('wrk_logs', 1)
      assert.equal(last, { lines: all.lines.slice(-1), truncated: true })
      assert.equal(await provisioner.logs('wrk_missing', 5), { lines: [], truncated: false })
      assert.equal(provisioner.running(), [{ workerId: 'wrk_logs', generation: 1 }])
      assert.equal(await provisioner.close(), ['wrk_logs'])
      assert.is((await podman.containers(workerLabel('wrk_logs'))).length, 0, 'close removed the container')
    } finally {
      await provisioner.close()
      await podman.close()
    }
  })
})

test('a container Worker on its own network (slirp4netns) is reached through a published loopback port and reaches the control plane for its heartbeats', async () => {
  if (!podmanAvailable()) {
    console.log('  (skipped: podman and runc are not installed)')
    return
  }
  await withTempDir(async (dir) => {
    const podman = await startTestEngine(join(dir, 'engine'))
    let t: Awaited<ReturnType<typeof startAsyncTestPlane>> | null = null
    try {
      const image = await podman.loadImage(await compiledBinary())
      t = await startAsyncTestPlane({
        listen: true,
        file: {
          workers: {
            container: { engine: podman.url, image, network: 'slirp4netns:allow_host_loopback=true' },
          },
        },
      })
      const org = await buildFixtureOrg(t.client, 'slirp')
      const created = await t.client.post('/v1/workers', {
        token: org.owner.token,
        json: { name: 'netns', provisioner: 'container' },
      })
      assert.is(created.status, 202)
      const id = created.body.item.id as string
      const ready = await waitFor(
        () => t!.client.get(`/v1/workers/${id}/runtime`, { token: org.owner.token }),
        (r) => r.body.item.state !== 'provisioning',
        60_000,
        100,
      )
      assert.equal([ready.body.item.state, ready.body.item.stateReason], ['healthy', 'heartbeat'])
      assert.match(ready.body.item.url, /^http:\/\/127\.0\.0\.1:\d+$/, JSON.stringify(ready.body.item))
      assert.is((await fetch(`${ready.body.item.url}/health`)).status, 200, 'the published port answers')
      const [box] = await podman.containers(workerLabel(id))
      const inspect = (await podman.engine.json<Record<string, any>>('GET', `/containers/${box!.Id}/json`)).value!
      assert.match(String(inspect.HostConfig.NetworkMode), /slirp4netns/)
    } finally {
      await t?.close()
      await podman.close()
    }
  })
})

test.run()
