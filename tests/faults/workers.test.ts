/**
 * Fault scenarios for hosted Workers against the compiled binary: token rotations back to back
 * and concurrent (one runtime at a time, every revoked token refused at once), delete and SIGTERM
 * (no runtime left), SIGKILL of the control plane followed by a restart (the runtimes it left are
 * stopped and replaced). Runtimes are counted from /proc by the Worker id in their environment.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, compiledBinary, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { rawConnect, type RawConnection } from '../raw-socket.ts'

const faults = suite('faults/workers', { timeoutMs: 240_000 })
const dir = tempDir('svc-faults-workers-')
let binary = ''

faults.before(async () => {
  // One build shared with every other suite that runs the binary in this test process.
  binary = await compiledBinary()
})

faults.after(() => {
  // Whatever a failed test left behind: only runtimes started under this suite's directory.
  for (const pid of runtimePids()) {
    if (!environOf(pid).includes(dir.path)) continue
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
  dir.remove()
})

function environOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8')
  } catch {
    return ''
  }
}

function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** Live runtime processes, of one Worker or of any. */
function runtimePids(workerId?: string): number[] {
  const needle = workerId ? `SERVICE_WORKER_ID=${workerId}\0` : 'SERVICE_WORKER_ID=wrk_'
  const pids: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    if (environOf(pid).includes(needle) && running(pid)) pids.push(pid)
  }
  return pids
}

interface Tokens {
  client: string
  host: string
  activity: string
}

/** A control plane started from the binary over one data directory (restartable). */
function controlPlane(name: string) {
  const config = join(dir.path, `${name}.json`)
  writeFileSync(
    config,
    JSON.stringify({
      logRequests: false,
      openSignUp: true,
      jobs: { pollIntervalMs: 20, concurrency: 4 },
      workers: { heartbeatIntervalMs: 200, staleAfterMs: 3000, sweepIntervalMs: 100, runtimeCheckIntervalMs: 100 },
    }),
  )
  const data = join(dir.path, `${name}-data`)
  let child: ChildServer | null = null
  let token = ''
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${child!.url}${path}`, {
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
  return {
    call,
    get child() {
      return child!
    },
    async start() {
      child = await startChild(
        binary,
        ['--mode', 'control-plane', '--config', config, '--data-dir', data, '--port', '0'],
        {
          cwd: dir.path,
          env: { HOME: dir.path },
          timeoutMs: 30_000,
        },
      )
    },
    async signUp() {
      const up = await call('POST', '/v1/auth/sign-up', {
        email: `owner@${name}.test`,
        password: `pw-${name}-long-secret`,
        name: 'owner',
      })
      assert.is(up.status, 201)
      token = up.body.session.token
      assert.is((await call('POST', '/v1/orgs', { name: `Org ${name}` })).status, 201)
    },
    async createWorker(workerName: string): Promise<string> {
      const created = await call('POST', '/v1/workers', { name: workerName, provisioner: 'process' })
      assert.is(created.status, 202)
      return created.body.item.id
    },
    /** Waits until the Worker is healthy and its runtime URL is known. */
    async healthy(id: string, timeoutMs = 30_000): Promise<string> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const runtime = await call('GET', `/v1/workers/${id}/runtime`)
        if (runtime.body.item.state === 'healthy' && runtime.body.item.url) return runtime.body.item.url
        if (runtime.body.item.state === 'failed' || Date.now() > deadline)
          throw new Error(`Worker ${id} did not become healthy: ${JSON.stringify(runtime.body.item)}`)
        await new Promise((r) => setTimeout(r, 50))
      }
    },
    async rotate(id: string): Promise<{ generation: number; tokens: Tokens }> {
      const issued = await call('POST', `/v1/workers/${id}/tokens`)
      assert.is(issued.status, 201)
      return { generation: issued.body.item.generation, tokens: issued.body.item.tokens }
    },
  }
}

let nextAddress = 0

/**
 * Status of one request to a runtime, or 0 when nothing listens. Each probe comes from its own
 * loopback address: the runtime locks an address out (429) after ten failed authentications,
 * and this suite fails hundreds on purpose.
 */
async function probe(url: string, path: string, header: string): Promise<number> {
  nextAddress++
  const localAddress = `127.0.${1 + Math.floor(nextAddress / 250)}.${1 + (nextAddress % 250)}`
  let connection: RawConnection
  try {
    connection = await rawConnect(url, `GET ${path} HTTP/1.1\r\nHost: x\r\n${header}\r\nConnection: close\r\n\r\n`, {
      localAddress,
    })
  } catch {
    return 0
  }
  await connection.closed(10_000)
  connection.destroy()
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(connection.received())?.[1] ?? -1)
}

/** Whether the runtime at `url` refuses `token` as a client token (or no longer listens). */
async function refused(url: string, token: string): Promise<boolean> {
  const status = await probe(url, '/workspaces', `Authorization: Bearer ${token}`)
  return status === 401 || status === 0
}

faults(
  '20 token rotations, some concurrent, leave exactly one runtime and every revoked token is refused the moment the rotation answers',
  async () => {
    const cp = controlPlane('rotate')
    await cp.start()
    // Sampled throughout: more than one runtime of the Worker at any moment is the defect.
    let most = 0
    let workerId = ''
    const sampler = setInterval(() => {
      if (workerId) most = Math.max(most, runtimePids(workerId).length)
    }, 30)
    try {
      await cp.signUp()
      workerId = await cp.createWorker('rotating')
      const urls = new Set([await cp.healthy(workerId)])
      const issued: Array<{ generation: number; tokens: Tokens }> = []

      // Sequential, each waiting for the new runtime: the previous set is refused as soon as the
      // rotation has answered (the old runtime was stopped before the answer).
      for (let i = 0; i < 5; i++) {
        const before = [...urls].at(-1)!
        const next = await cp.rotate(workerId)
        const previous = issued.at(-1)
        if (previous) assert.ok(await refused(before, previous.tokens.client), `set ${previous.generation} refused`)
        issued.push(next)
        const url = await cp.healthy(workerId)
        urls.add(url)
        assert.is(await probe(url, '/workspaces', `Authorization: Bearer ${next.tokens.client}`), 200)
      }
      // Back to back without waiting, then concurrent batches.
      for (let i = 0; i < 5; i++) issued.push(await cp.rotate(workerId))
      for (let batch = 0; batch < 2; batch++)
        issued.push(...(await Promise.all(Array.from({ length: 5 }, () => cp.rotate(workerId)))))
      assert.is(issued.length, 20)
      assert.is(new Set(issued.map((s) => s.generation)).size, 20, 'every rotation got its own generation')

      const finalUrl = await cp.healthy(workerId)
      urls.add(finalUrl)
      const latest = issued.reduce((a, b) => (b.generation > a.generation ? b : a))
      // The last rotation's runtime may still be replacing an earlier one: wait for its set to work.
      const deadline = Date.now() + 30_000
      let url = finalUrl
      const works = async () =>
        (await probe(url, '/workspaces', `Authorization: Bearer ${latest.tokens.client}`)) === 200
      while (!(await works()) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100))
        url = await cp.healthy(workerId)
        urls.add(url)
      }
      assert.ok(await works(), 'the newest set works')
      assert.equal(runtimePids(workerId).length, 1, 'exactly one runtime process')
      for (const set of issued) {
        if (set === latest) continue
        for (const known of urls)
          assert.ok(await refused(known, set.tokens.client), `set ${set.generation} refused at ${known} (now ${url})`)
        assert.is(await probe(url, '/tokens', `X-Service-Host-Token: ${set.tokens.host}`), 401)
        const beat = await fetch(`${cp.child.url}/v1/workers/${workerId}/heartbeat`, {
          method: 'POST',
          headers: { authorization: `Bearer ${set.tokens.activity}`, 'content-type': 'application/json' },
          body: '{}',
        })
        await beat.body?.cancel()
        assert.is(beat.status, 401)
      }
      assert.ok(most <= 1, `at most one runtime at any moment (saw ${most})`)
    } finally {
      clearInterval(sampler)
      await cp.child.stop()
    }
  },
)

faults('deleting a Worker and stopping the control plane with SIGTERM leave no runtime running', async () => {
  const cp = controlPlane('stop')
  await cp.start()
  try {
    await cp.signUp()
    const doomed = await cp.createWorker('doomed')
    const kept = await cp.createWorker('kept')
    await cp.healthy(doomed)
    await cp.healthy(kept)
    assert.is(runtimePids(doomed).length, 1)
    assert.is((await cp.call('DELETE', `/v1/workers/${doomed}`)).status, 204)
    assert.equal(runtimePids(doomed), [], 'the delete waited for its runtime to exit')
    assert.is(runtimePids(kept).length, 1)
  } finally {
    assert.is(await cp.child.stop('SIGTERM'), 0)
  }
  assert.equal(
    runtimePids().filter((pid) => environOf(pid).includes(join(dir.path, 'stop-data'))),
    [],
    'SIGTERM stopped every runtime and waited for them',
  )
})

faults(
  'after a SIGKILL of the control plane, the restarted one stops the runtimes it left and runs each Worker once',
  async () => {
    const cp = controlPlane('crash')
    await cp.start()
    let left: number[] = []
    try {
      await cp.signUp()
      const ids = [await cp.createWorker('one'), await cp.createWorker('two')]
      for (const id of ids) await cp.healthy(id)
      left = ids.flatMap((id) => runtimePids(id))
      assert.is(left.length, 2)
      cp.child.process.kill('SIGKILL')
      await cp.child.stop()
      assert.ok(left.every(running), 'the runtimes outlived the control plane')

      await cp.start()
      for (const id of ids) {
        const deadline = Date.now() + 30_000
        // Healthy again through a runtime this control plane started (not the orphan's heartbeat).
        while (Date.now() < deadline) {
          await cp.healthy(id)
          const pids = runtimePids(id)
          if (pids.length === 1 && !left.includes(pids[0]!)) break
          await new Promise((r) => setTimeout(r, 100))
        }
        const pids = runtimePids(id)
        assert.is(pids.length, 1, `one runtime for ${id}`)
        assert.not.ok(left.includes(pids[0]!), 'a new runtime, not the orphan')
      }
      assert.not.ok(left.some(running), 'the orphaned runtimes were stopped')
    } finally {
      await cp.child.stop('SIGTERM')
    }
    assert.equal(
      runtimePids().filter((pid) => environOf(pid).includes(join(dir.path, 'crash-data'))),
      [],
    )
  },
)

faults.run()
