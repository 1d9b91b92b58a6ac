/**
 * The data plane against a real server process: a SIGKILL in the middle of concurrent
 * write-batches leaves every file whole (old or new content, never a mix, no temp file in the
 * catalog), and a large inbox upload is streamed to disk with flat resident memory.
 */
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, BUN, DENO, startChild, suite, withTempDir, type ChildServer } from '../../../tests/harness.ts'

const test = suite('workspace/files in a real server process', { timeoutMs: 240_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')
const CLIENT = 'process-client-token-0123456789'
const HOST = 'process-host-token-0123456789ab'
const FILES = 24
const REPEAT = 8192
const auth = { authorization: `Bearer ${CLIENT}`, 'content-type': 'application/json' }

/** File content: one token repeated, so any mix of two versions is detectable. */
const content = (file: number, gen: number) => `[f${file}-g${gen}]`.repeat(REPEAT)

function writeConfig(dir: string, extra: Record<string, unknown> = {}): string {
  const config = join(dir, 'server.json')
  writeFileSync(
    config,
    JSON.stringify({
      token: CLIENT,
      hostToken: HOST,
      workspaces: [{ path: 'ws' }],
      dataDir: 'data',
      approval: { mode: 'auto' },
      logRequests: false,
      ...extra,
    }),
  )
  return config
}

async function session(url: string): Promise<{ id: string; wsId: string }> {
  const wsId = (await (await fetch(`${url}/workspaces`, { headers: auth })).json()).items[0].id
  const created = await (
    await fetch(`${url}/workspace/${wsId}/files/sessions`, { method: 'POST', headers: auth, body: '{}' })
  ).json()
  return { id: created.session.id, wsId }
}

function rssKb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match ? Number(match[1]) : 0
}

test('a server killed with SIGKILL during concurrent write-batches leaves every file old or new, and no temp file in the catalog', async () => {
  await withTempDir(async (dir) => {
    const ws = join(dir, 'ws')
    mkdirSync(join(ws, 'data'), { recursive: true })
    for (let f = 0; f < FILES; f++) writeFileSync(join(ws, 'data', `f${f}.txt`), content(f, 0))
    const config = writeConfig(dir)
    let server: ChildServer = await startChild(BUN, [ENTRY, '--config', config, '--port', '0'], {
      cwd: dir,
      env: { HOME: dir },
    })
    let generation = 0
    let completed = 0
    try {
      const { id } = await session(server.url)
      const writer = async (lane: number) => {
        for (;;) {
          const gen = ++generation
          const writes = Array.from({ length: 6 }, (_, k) => (lane * 6 + k + gen) % FILES).map((f) => ({
            path: `data/f${f}.txt`,
            contentBase64: Buffer.from(content(f, gen)).toString('base64'),
            force: true,
          }))
          try {
            const res = await fetch(`${server.url}/files/sessions/${id}/write-batch`, {
              method: 'POST',
              headers: auth,
              body: JSON.stringify({ writes }),
            })
            if (res.status === 200) completed++
            await res.arrayBuffer()
          } catch {
            return // the server is gone
          }
        }
      }
      const lanes = Array.from({ length: 4 }, (_, lane) => writer(lane))
      while (completed < 6) await new Promise((r) => setTimeout(r, 5))
      // Kill while the lanes still have batches in flight.
      server.process.kill('SIGKILL')
      await Promise.all(lanes)
    } finally {
      await server.stop('SIGKILL')
    }
    assert.ok(completed >= 6, `batches completed before the kill: ${completed}`)
    const changed = new Set<number>()
    for (let f = 0; f < FILES; f++) {
      const text = readFileSync(join(ws, 'data', `f${f}.txt`), 'utf8')
      const gen = Number(/^\[f\d+-g(\d+)\]/.exec(text)?.[1] ?? -1)
      assert.ok(gen >= 0 && gen <= generation, `f${f} starts with a known version`)
      assert.ok(text === content(f, gen), `f${f} holds exactly one version (generation ${gen}), not a mix`)
      if (gen > 0) changed.add(f)
    }
    assert.ok(changed.size > 0, 'some writes landed before the kill')

    server = await startChild(BUN, [ENTRY, '--config', config, '--port', '0'], { cwd: dir, env: { HOME: dir } })
    try {
      const { id } = await session(server.url)
      const page = await (
        await fetch(`${server.url}/files/sessions/${id}/catalog/snapshot?limit=10000&includeDirs=false`, {
          headers: auth,
        })
      ).json()
      const paths = page.items.map((i: { path: string }) => i.path)
      assert.is(paths.length, FILES)
      assert.not.ok(
        paths.some((p: string) => p.includes('.svc-tmp-')),
        'no temp file is listed',
      )
      const read = await (
        await fetch(`${server.url}/files/sessions/${id}/read-batch`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ paths: ['data/f0.txt'] }),
        })
      ).json()
      assert.is(
        Buffer.from(read.items[0].contentBase64, 'base64').toString('utf8'),
        readFileSync(join(ws, 'data/f0.txt'), 'utf8'),
      )
      const temp = readdirSync(join(ws, 'data')).filter((n) => n.startsWith('.svc-tmp-'))
      for (const name of temp) assert.not.ok(paths.includes(`data/${name}`))
    } finally {
      assert.is(await server.stop(), 0)
    }
  })
})

/** Uploads `size` bytes as a streamed multipart body and samples the child's RSS meanwhile. */
async function uploadMeasured(
  server: ChildServer,
  wsId: string,
  size: number,
): Promise<{ status: number; body: unknown; idleKb: number; peakKb: number }> {
  const pid = server.process.pid!
  for (let i = 0; i < 5; i++)
    await (await fetch(`${server.url}/workspace/${wsId}/inbox`, { headers: auth })).arrayBuffer()
  await new Promise((r) => setTimeout(r, 300))
  const idleKb = rssKb(pid)
  let peakKb = idleKb
  const sampler = setInterval(() => {
    try {
      peakKb = Math.max(peakKb, rssKb(pid))
    } catch {
      /* exited */
    }
  }, 25)
  const boundary = 'svcUploadBoundary'
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  )
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const chunk = Buffer.alloc(256 * 1024, 0x61)
  let sent = 0
  let stage = 0
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (stage === 0) {
        c.enqueue(head)
        stage = 1
        return
      }
      if (stage === 1) {
        const n = Math.min(chunk.length, size - sent)
        if (n > 0) {
          c.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n))
          sent += n
          return
        }
        stage = 2
      }
      c.enqueue(tail)
      c.close()
    },
  })
  try {
    const res = await fetch(`${server.url}/workspace/${wsId}/inbox?path=big.bin`, {
      method: 'POST',
      headers: { authorization: auth.authorization, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: 'half',
    } as RequestInit)
    return { status: res.status, body: await res.json(), idleKb, peakKb }
  } finally {
    clearInterval(sampler)
  }
}

/** Starts a real server with `command args`, uploads 200 MB to its inbox and checks memory stays bounded. */
async function uploadStaysBounded(label: string, command: string, args: string[], cwd?: string): Promise<void> {
  await withTempDir(async (dir) => {
    mkdirSync(join(dir, 'ws'))
    const config = writeConfig(dir, { inbox: { maxBytes: 300_000_000, requireApproval: false } })
    const server = await startChild(command, [...args, ENTRY, '--config', config, '--port', '0'], {
      cwd: cwd ?? dir,
      env: { HOME: dir },
      timeoutMs: 90_000,
    })
    try {
      const wsId = (await (await fetch(`${server.url}/workspaces`, { headers: auth })).json()).items[0].id
      const size = 200_000_000
      const r = await uploadMeasured(server, wsId, size)
      assert.equal([r.status, r.body], [200, { ok: true, path: 'big.bin', bytes: size }])
      assert.is(statSync(join(dir, 'ws/.opencode/service/inbox/big.bin')).size, size)
      const growthMb = (r.peakKb - r.idleKb) / 1024
      console.log(
        `    ${label}: idle ${Math.round(r.idleKb / 1024)} MB, peak ${Math.round(r.peakKb / 1024)} MB, growth ${growthMb.toFixed(1)} MB for ${size / 1e6} MB`,
      )
      assert.ok(growthMb < 100, `RSS grew by ${growthMb.toFixed(1)} MB`)
    } finally {
      await server.stop()
    }
  })
}

test('a 200 MB inbox upload to the Bun server is streamed to disk with resident memory under 100 MB above idle', () =>
  uploadStaysBounded('bun', BUN, []))

test('a 200 MB inbox upload to the server under Deno is streamed to disk with resident memory under 100 MB above idle', () =>
  uploadStaysBounded('deno', DENO, ['run', '--allow-all', '--unstable-no-legacy-abort'], resolve(ENTRY, '../..')))

test.run()
