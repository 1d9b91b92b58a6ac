/**
 * Fault scenarios against the compiled binary (`dist/service-server`), loopback only and bounded in
 * time: stalled request bodies under a low descriptor limit, SIGKILL right after acknowledged
 * writes, edits made while stopped, crash leftovers, shutdown with writes waiting for approval, and
 * a scan of everything the processes printed for the credentials they were given.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, compiledBinary, runCommand, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { rawConnect, type RawConnection } from '../raw-socket.ts'

const root = resolve(import.meta.dirname, '../..')
const binary = join(root, 'dist', 'service-server')
const faults = suite('faults/binary', { timeoutMs: 120_000 })
const dir = tempDir('svc-faults-')

const CLIENT = 'faults-client-token-0123456789'
const HOST = 'faults-host-token-0123456789ab'
/** Every credential handed to a process here; none may appear in anything it prints. */
const SECRETS = [CLIENT, HOST]
const printed: string[] = []

faults.before(async () => {
  // One build per test run, shared by every suite that runs the binary (it is this same path).
  await compiledBinary()
})
faults.after(() => dir.remove())

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A workspace server over `name`'s directories (fixture copied once), started with the binary. */
async function startWorkspace(
  name: string,
  approval: 'auto' | 'manual' = 'auto',
  env: Record<string, string> = {},
): Promise<ChildServer> {
  const base = join(dir.path, name)
  if (!existsSync(base)) {
    mkdirSync(base)
    cpSync(join(root, 'fixtures/workspace-basic'), join(base, 'ws'), { recursive: true })
  }
  writeFileSync(
    join(base, 'server.json'),
    JSON.stringify({
      token: CLIENT,
      hostToken: HOST,
      workspaces: [{ path: join(base, 'ws'), id: 'main' }],
      dataDir: join(base, 'data'),
      approval: { mode: approval, timeoutMs: 60_000 },
      events: { debounceMs: 2000 },
    }),
  )
  return startChild(binary, ['--config', join(base, 'server.json'), '--port', '0'], {
    cwd: base,
    env: { HOME: base, ...env },
  })
}

async function stop(child: ChildServer, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  const code = await child.stop(signal)
  printed.push(child.stdoutLines.join('\n'), child.stderr())
  return code
}

const auth = { authorization: `Bearer ${CLIENT}` }
const json = (body: unknown) => ({
  headers: { ...auth, 'content-type': 'application/json' },
  body: JSON.stringify(body),
})

async function reloadEvents(url: string): Promise<Array<{ source?: string; trigger?: { name?: string } }>> {
  const page = await (await fetch(`${url}/workspace/main/events`, { headers: auth })).json()
  return page.items.filter((e: { type: string }) => e.type === 'reload')
}

faults(
  '300 stalled bodies from one address under ulimit -n 256: /health answers within 1 s throughout, every stalled socket is closed by its deadline',
  async () => {
    const bodyIdle = 3
    const child = await startChild(
      'bash',
      [
        '-c',
        'ulimit -n 256; exec "$0" "$@"',
        binary,
        '--mode',
        'control-plane',
        '--data-dir',
        join(dir.path, 'cp-stall'),
        '--port',
        '0',
      ],
      { cwd: dir.path, env: { HOME: dir.path, SERVICE_BODY_IDLE_TIMEOUT: String(bodyIdle) } },
    )
    const sockets: RawConnection[] = []
    try {
      const stalled =
        'POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":"'
      const opened = performance.now()
      for (let i = 0; i < 300; i++) {
        sockets.push(await rawConnect(child.url, stalled, { localAddress: '127.0.0.1' }).catch(() => null as never))
      }
      const live = sockets.filter(Boolean)
      assert.ok(live.length >= 290, `opened ${live.length} stalled connections`)
      // /health from another loopback address, every 200 ms until the body deadline has passed.
      let slowest = 0
      while (performance.now() - opened < (bodyIdle + 2) * 1000) {
        const started = performance.now()
        const probe = await rawConnect(child.url, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', {
          localAddress: '127.0.0.2',
        })
        const answered = await probe.waitFor('"ok":true', 1000)
        probe.destroy()
        assert.ok(answered, `/health from 127.0.0.2 answered: ${probe.received().slice(0, 40)}`)
        slowest = Math.max(slowest, performance.now() - started)
        await sleep(200)
      }
      assert.ok(slowest < 1000, `slowest /health ${Math.round(slowest)} ms`)
      // Each stalled socket was answered (408 at the deadline, or 503 when over the cap) and closed.
      const limit = (bodyIdle + 6) * 1000
      const closed = await Promise.all(live.map((s) => s.closed(Math.max(0, limit - (performance.now() - opened)))))
      const open = closed.filter((c) => c === null).length
      assert.is(open, 0, `${open} stalled sockets still open after ${limit} ms`)
      const answers = live.map((s) => /^HTTP\/1\.1 (\d{3})/.exec(s.received())?.[1] ?? 'none')
      const counts: Record<string, number> = {}
      for (const a of answers) counts[a] = (counts[a] ?? 0) + 1
      console.log(
        `faults/binary: ${live.length} stalled bodies, answers ${JSON.stringify(counts)}, slowest /health ${Math.round(slowest)} ms, all closed ${Math.round(performance.now() - opened)} ms after opening`,
      )
      assert.ok((counts['408'] ?? 0) > 0, JSON.stringify(counts))
      assert.ok((counts['503'] ?? 0) > 0, JSON.stringify(counts))
      assert.equal(Object.keys(counts).sort(), ['408', '503'], JSON.stringify(counts))
      // And the server still works afterwards.
      assert.is((await fetch(`${child.url}/health`)).status, 200)
    } finally {
      for (const s of sockets) s?.destroy()
      await stop(child)
    }
  },
)

faults('a stalled inbox upload is answered 408 at its deadline and leaves no temp file behind', async () => {
  const child = await startWorkspace('inbox-stall', 'auto', { SERVICE_BODY_IDLE_TIMEOUT: '2' })
  const inbox = join(dir.path, 'inbox-stall', 'ws', '.opencode/service/inbox')
  try {
    const boundary = 'faultsboundary'
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`
    const conn = await rawConnect(
      child.url,
      `POST /workspace/main/inbox HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 1000000\r\n\r\n${head}${'x'.repeat(64 * 1024)}`,
    )
    // The part has begun streaming to a temp file in the inbox by now.
    let staged: string[] = []
    for (let i = 0; i < 20 && staged.length === 0; i++) {
      await sleep(50)
      staged = existsSync(inbox) ? readdirSync(inbox).filter((n) => n.startsWith('.svc-tmp-')) : []
    }
    assert.ok(staged.length > 0, 'the upload was being staged')
    const closedAfter = await conn.closed(10_000)
    assert.ok(closedAfter !== null && closedAfter >= 1500, `closed after ${closedAfter} ms`)
    assert.match(conn.received(), /^HTTP\/1\.1 408/)
    let left = staged
    for (let i = 0; i < 40 && left.length; i++) {
      await sleep(50)
      left = readdirSync(inbox).filter((n) => n.startsWith('.svc-tmp-'))
    }
    assert.equal(left, [], 'the temp file was removed')
  } finally {
    await stop(child)
  }
})

faults('SIGKILL right after an acknowledged SKILL.md write-batch: the event is there after restart', async () => {
  let child = await startWorkspace('kill')
  try {
    const session = await (
      await fetch(`${child.url}/workspace/main/files/sessions`, { method: 'POST', ...json({ write: true }) })
    ).json()
    const skill = '---\nname: after-kill\ndescription: Written right before a SIGKILL.\n---\n\nBody.\n'
    const res = await fetch(`${child.url}/files/sessions/${session.session.id}/write-batch`, {
      method: 'POST',
      ...json({
        writes: [
          { path: '.opencode/skills/after-kill/SKILL.md', contentBase64: Buffer.from(skill).toString('base64') },
        ],
      }),
    })
    assert.is(res.status, 200)
    // Killed inside the watcher's 2 s debounce: only the write itself can have recorded the event.
    child.process.kill('SIGKILL')
    await stop(child, 'SIGKILL')
    child = await startWorkspace('kill')
    const events = await reloadEvents(child.url)
    assert.is(events.filter((e) => e.trigger?.name === 'after-kill').length, 1, JSON.stringify(events))
  } finally {
    await stop(child)
  }
})

faults(
  'an edit made while stopped gets an event at start, and stale temp files of killed writes are swept',
  async () => {
    let child = await startWorkspace('offline')
    await stop(child)
    const ws = join(dir.path, 'offline', 'ws')
    mkdirSync(join(ws, '.opencode/skills/offline-edit'), { recursive: true })
    writeFileSync(join(ws, '.opencode/skills/offline-edit/SKILL.md'), '---\nname: offline-edit\ndescription: x\n---\n')
    const stale = join(ws, '.opencode/skills/.svc-tmp-SKILL.md.0123456789ab')
    writeFileSync(stale, 'partial write')
    child = await startWorkspace('offline')
    try {
      const events = await reloadEvents(child.url)
      const offline = events.filter((e) => e.trigger?.name === 'offline-edit')
      assert.equal(
        offline.map((e) => e.source),
        ['disk'],
      )
      for (let i = 0; i < 50 && existsSync(stale); i++) await sleep(100)
      assert.not.ok(existsSync(stale), 'the temp file left by a killed write was removed')
    } finally {
      await stop(child)
    }
  },
)

faults(
  'SIGTERM with a write waiting for approval answers it 503 server_stopping and records it cancelled',
  async () => {
    let child = await startWorkspace('pending', 'manual')
    let write: Promise<Response> | undefined
    try {
      write = fetch(`${child.url}/workspace/main/skills`, {
        method: 'POST',
        ...json({ name: 'pending-at-stop', content: '---\nname: pending-at-stop\ndescription: x\n---\n' }),
      })
      let pending: { id: string } | undefined
      for (let i = 0; i < 100 && !pending; i++) {
        pending = (await (await fetch(`${child.url}/approvals`, { headers: { 'x-service-host-token': HOST } })).json())
          .items[0]
        if (!pending) await sleep(50)
      }
      assert.ok(pending, 'the write is waiting for the host')
      const stopping = stop(child)
      const res = await write
      assert.is(res.status, 503)
      assert.is((await res.json()).code, 'server_stopping')
      assert.is(await stopping, 0)
      child = await startWorkspace('pending', 'manual')
      const audit = (await (await fetch(`${child.url}/workspace/main/audit`, { headers: auth })).json()).items
      assert.ok(
        audit.some(
          (e: { action: string; target: string }) => e.action === 'approval.cancel' && e.target === pending!.id,
        ),
        JSON.stringify(audit),
      )
    } finally {
      await stop(child)
    }
  },
)

faults('no credential value appears in anything the processes printed, nor in a refused start or --help', async () => {
  const invalid = await runCommand(binary, ['--port', '0'], {
    cwd: dir.path,
    env: { HOME: dir.path, SERVICE_TOKEN: 'short-tok' },
  })
  assert.is(invalid.code, 2)
  assert.match(invalid.stderr, /SERVICE_TOKEN/)
  assert.not.ok(invalid.stderr.includes('short-tok'), invalid.stderr)
  const help = await runCommand(binary, ['--help'], { env: { SERVICE_TOKEN: CLIENT, SERVICE_HOST_TOKEN: HOST } })
  assert.is(help.code, 0)
  printed.push(help.stdout, help.stderr)
  const everything = printed.join('\n')
  assert.ok(everything.length > 0)
  for (const secret of SECRETS) assert.not.ok(everything.includes(secret), 'a credential was printed')
})

faults.run()
