import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
} from 'node:fs'
import { join } from 'node:path'
import { assert, suite, takeSse, tempDir } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/files sessions and batches', { timeoutMs: 60_000 })
const b64 = (s: string) => Buffer.from(s).toString('base64')

async function openSession(s: TestServer, init: { token?: string; write?: boolean; ttlSeconds?: number } = {}) {
  const res = await s.req(`/workspace/${s.wsId}/files/sessions`, {
    method: 'POST',
    token: init.token ?? CLIENT_TOKEN,
    json: { write: init.write, ttlSeconds: init.ttlSeconds },
  })
  assert.is(res.status, 200)
  return (await res.json()).session as {
    id: string
    canWrite: boolean
    ttlMs: number
    expiresAt: number
    createdAt: number
  }
}

async function issue(s: TestServer, scope: string): Promise<string> {
  return (await (await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope } })).json()).token
}

const post = (s: TestServer, path: string, json: unknown, token = CLIENT_TOKEN) =>
  s.req(path, { method: 'POST', token, json })

test('a session has the default TTL, clamps requested TTLs, renews and closes', async () => {
  const s = await startTestServer()
  try {
    const session = await openSession(s)
    assert.ok(session.canWrite)
    assert.ok(Math.abs(session.ttlMs - 15 * 60_000) < 1000)
    assert.ok(Math.abs((await openSession(s, { ttlSeconds: 1 })).ttlMs - 30_000) < 1000, 'minimum 30 s')
    assert.ok(Math.abs((await openSession(s, { ttlSeconds: 10 ** 7 })).ttlMs - 86_400_000) < 1000, 'maximum 24 h')
    s.clock.advance(10 * 60_000)
    const renewed = await (await post(s, `/files/sessions/${session.id}/renew`, { ttlSeconds: 120 })).json()
    assert.ok(Math.abs(renewed.session.ttlMs - 120_000) < 1000)
    assert.is((await s.req(`/files/sessions/${session.id}`, { method: 'DELETE', token: CLIENT_TOKEN })).status, 200)
    const gone = await post(s, `/files/sessions/${session.id}/read-batch`, { paths: ['opencode.jsonc'] })
    assert.is(gone.status, 404)
    assert.is((await gone.json()).code, 'file_session_not_found')
  } finally {
    await s.dispose()
  }
})

test('an expired session is not found and another token gets 403 on every session route', async () => {
  const s = await startTestServer()
  try {
    const other = await issue(s, 'owner')
    const session = await openSession(s)
    for (const [method, path, json] of [
      ['POST', `/files/sessions/${session.id}/read-batch`, { paths: ['a'] }],
      ['POST', `/files/sessions/${session.id}/write-batch`, { writes: [{ path: 'a', contentBase64: b64('x') }] }],
      ['POST', `/files/sessions/${session.id}/ops`, { operations: [{ type: 'mkdir', path: 'd' }] }],
      ['POST', `/files/sessions/${session.id}/renew`, {}],
      ['GET', `/files/sessions/${session.id}/catalog/snapshot`, undefined],
      ['GET', `/files/sessions/${session.id}/catalog/events`, undefined],
      ['DELETE', `/files/sessions/${session.id}`, undefined],
    ] as const) {
      const res = await s.req(path, { method, token: other, json })
      assert.is(res.status, 403, `${method} ${path}`)
      assert.is((await res.json()).message, 'File session does not belong to this token')
    }
    assert.not.ok(existsSync(join(s.root, 'a')))
    s.clock.advance(15 * 60_000 + 1)
    const expired = await post(s, `/files/sessions/${session.id}/read-batch`, { paths: ['opencode.jsonc'] })
    assert.is(expired.status, 404)
    assert.is((await expired.json()).code, 'file_session_not_found')
  } finally {
    await s.dispose()
  }
})

test('viewer sessions, write:false sessions and a read-only server cannot write but can read', async () => {
  const s = await startTestServer()
  const ro = await startTestServer({ readOnly: true })
  try {
    const viewer = await issue(s, 'viewer')
    const vs = await openSession(s, { token: viewer })
    assert.is(vs.canWrite, false)
    const read = await (
      await post(s, `/files/sessions/${vs.id}/read-batch`, { paths: ['opencode.jsonc'] }, viewer)
    ).json()
    assert.is(read.items[0].ok, true)
    assert.is(
      (
        await post(
          s,
          `/files/sessions/${vs.id}/write-batch`,
          { writes: [{ path: 'v.txt', contentBase64: b64('x') }] },
          viewer,
        )
      ).status,
      403,
    )
    const noWrite = await openSession(s, { write: false })
    assert.is(noWrite.canWrite, false)
    const denied = await post(s, `/files/sessions/${noWrite.id}/write-batch`, {
      writes: [{ path: 'v.txt', contentBase64: b64('x') }],
    })
    assert.is(denied.status, 403)
    assert.is((await denied.json()).code, 'file_session_read_only')
    const roSession = await openSession(ro)
    assert.is(roSession.canWrite, false)
    const roWrite = await post(ro, `/files/sessions/${roSession.id}/ops`, {
      operations: [{ type: 'mkdir', path: 'x' }],
    })
    assert.is(roWrite.status, 403)
    assert.is((await roWrite.json()).code, 'read_only')
    assert.not.ok(existsSync(join(s.root, 'v.txt')))
    assert.not.ok(existsSync(join(ro.root, 'x')))
  } finally {
    await s.dispose()
    await ro.dispose()
  }
})

test('read-batch and write-batch round-trip bytes with revisions, per-item errors and conflicts', async () => {
  const s = await startTestServer()
  try {
    const session = await openSession(s)
    const bytes = Buffer.from([0, 1, 2, 255, 10, 13])
    const write = await (
      await post(s, `/files/sessions/${session.id}/write-batch`, {
        writes: [
          { path: 'docs/new/a.bin', contentBase64: bytes.toString('base64') },
          { path: '../escape.txt', contentBase64: b64('x') },
          { path: 'docs/b.md', contentBase64: b64('# b\n') },
        ],
      })
    ).json()
    assert.equal(
      write.items.map((i: { ok: boolean }) => i.ok),
      [true, false, true],
    )
    assert.is(write.items[1].code, 'invalid_path')
    assert.ok(Buffer.from(readFileSync(join(s.root, 'docs/new/a.bin'))).equals(bytes))
    const rev = write.items[0].revision as string
    assert.match(rev, /^\d+:6$/)
    const read = await (
      await post(s, `/files/sessions/${session.id}/read-batch`, { paths: ['docs/new/a.bin', 'missing.txt', 'docs'] })
    ).json()
    assert.is(read.items[0].contentBase64, bytes.toString('base64'))
    assert.is(read.items[0].revision, rev)
    assert.equal([read.items[1].code, read.items[2].code], ['file_not_found', 'file_not_found'])
    const stale = await (
      await post(s, `/files/sessions/${session.id}/write-batch`, {
        writes: [{ path: 'docs/new/a.bin', contentBase64: b64('new'), ifMatchRevision: '1:1' }],
      })
    ).json()
    assert.equal(
      [stale.items[0].code, stale.items[0].expectedRevision, stale.items[0].currentRevision],
      ['conflict', '1:1', rev],
    )
    assert.ok(Buffer.from(readFileSync(join(s.root, 'docs/new/a.bin'))).equals(bytes), 'a conflict writes nothing')
    const forced = await (
      await post(s, `/files/sessions/${session.id}/write-batch`, {
        writes: [{ path: 'docs/new/a.bin', contentBase64: b64('new'), ifMatchRevision: '1:1', force: true }],
      })
    ).json()
    assert.is(forced.items[0].ok, true)
    assert.is(forced.items[0].previousRevision, rev)
    const big = await (
      await post(s, `/files/sessions/${session.id}/write-batch`, {
        writes: [{ path: 'big.bin', contentBase64: Buffer.alloc(5_000_001).toString('base64') }],
      })
    ).json()
    assert.equal([big.items[0].code, big.items[0].maxBytes], ['file_too_large', 5_000_000])
    const tooMany = await post(s, `/files/sessions/${session.id}/read-batch`, {
      paths: Array.from({ length: 65 }, (_, i) => `f${i}`),
    })
    assert.is(tooMany.status, 400)
    const audit = await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()
    assert.ok(audit.items.some((e: { action: string }) => e.action === 'workspace.files.session.write'))
  } finally {
    await s.dispose()
  }
})

test('read-batch reuses settled content but never serves a file changed outside the server', async () => {
  const s = await startTestServer()
  try {
    writeFileSync(join(s.root, 'cached.txt'), 'version-1')
    s.clock.advance(5_000) // past the settle window, so the first read is cached
    const session = await openSession(s)
    const read = async () =>
      (await (await post(s, `/files/sessions/${session.id}/read-batch`, { paths: ['cached.txt'] })).json()).items[0]
    assert.is((await read()).contentBase64, b64('version-1'))
    assert.is(s.app.data.files.contentCache.size.entries, 1)
    assert.is((await read()).contentBase64, b64('version-1'), 'a hit serves the same bytes')
    await new Promise((resolve) => setTimeout(resolve, 30)) // past a coarse timestamp tick
    writeFileSync(join(s.root, 'cached.txt'), 'version-2') // same size, written behind the server's back
    const after = await read()
    assert.is(after.contentBase64, b64('version-2'))
    assert.is(after.bytes, 9)
    // Files above the synchronous read size take the threaded path and come back whole.
    const large = Buffer.alloc(300 * 1024, 0x5a)
    writeFileSync(join(s.root, 'large.bin'), large)
    const read2 = await (
      await post(s, `/files/sessions/${session.id}/read-batch`, { paths: ['large.bin', 'cached.txt'] })
    ).json()
    assert.equal([read2.items[0].ok, read2.items[0].bytes, read2.items[1].ok], [true, large.length, true])
    assert.ok(Buffer.from(read2.items[0].contentBase64, 'base64').equals(large))
  } finally {
    await s.dispose()
  }
})

test('write-batch keeps the permission bits of the files it replaces', async () => {
  const s = await startTestServer()
  try {
    writeFileSync(join(s.root, 'secrets.env'), 'KEY=1\n')
    chmodSync(join(s.root, 'secrets.env'), 0o600)
    writeFileSync(join(s.root, 'run.sh'), '#!/bin/sh\necho hi\n')
    chmodSync(join(s.root, 'run.sh'), 0o755)
    const session = await openSession(s)
    const write = await (
      await post(s, `/files/sessions/${session.id}/write-batch`, {
        writes: [
          { path: 'secrets.env', contentBase64: b64('KEY=2\n') },
          { path: 'run.sh', contentBase64: b64('#!/bin/sh\necho bye\n') },
        ],
      })
    ).json()
    assert.equal(
      write.items.map((i: { ok: boolean }) => i.ok),
      [true, true],
    )
    assert.is(readFileSync(join(s.root, 'secrets.env'), 'utf8'), 'KEY=2\n')
    assert.is(statSync(join(s.root, 'secrets.env')).mode & 0o777, 0o600)
    assert.is(statSync(join(s.root, 'run.sh')).mode & 0o777, 0o755)
  } finally {
    await s.dispose()
  }
})

test('two same-size writes in one clock tick still get different revisions, so a stale ifMatchRevision conflicts', async () => {
  const s = await startTestServer()
  try {
    const a = await openSession(s)
    const b = await openSession(s)
    const write = async (session: { id: string }, item: object) =>
      (await (await post(s, `/files/sessions/${session.id}/write-batch`, { writes: [item] })).json()).items[0]
    // The kernel stamps mtime with a coarse clock; 40 back-to-back rounds hit the same tick often
    // (the reviewer's run without the fix lost B's write in a third of them).
    for (let i = 0; i < 40; i++) {
      const path = `race/doc${i}.txt`
      const first = await write(a, { path, contentBase64: b64('v1-A') })
      const second = await write(b, { path, contentBase64: b64('v2-B'), ifMatchRevision: first.revision })
      assert.ok(second.ok, `round ${i}: B holds the current revision`)
      assert.is.not(second.revision, first.revision, `round ${i}: a write makes a new revision`)
      const stale = await write(a, { path, contentBase64: b64('v3-A'), ifMatchRevision: first.revision })
      assert.is(stale.code, 'conflict', `round ${i}: A's revision is stale`)
      assert.is(readFileSync(join(s.root, path), 'utf8'), 'v2-B')
    }
  } finally {
    await s.dispose()
  }
})

test('one manual approval covers a batch; a denied batch writes nothing; a file changed during approval conflicts', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    writeFileSync(join(s.root, 'keep.txt'), 'old')
    const session = await openSession(s)
    const pending = post(s, `/files/sessions/${session.id}/write-batch`, {
      writes: [
        { path: 'keep.txt', contentBase64: b64('new') },
        { path: 'fresh/one.txt', contentBase64: b64('1') },
      ],
    })
    const approval = await eventually(
      async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0],
    )
    assert.is(approval.action, 'workspace.files.session.write')
    assert.equal(approval.paths, [join(s.root, 'keep.txt'), join(s.root, 'fresh/one.txt')])
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    const denied = await pending
    assert.is(denied.status, 403)
    assert.is((await denied.json()).code, 'write_denied')
    assert.is(readFileSync(join(s.root, 'keep.txt'), 'utf8'), 'old')
    assert.not.ok(existsSync(join(s.root, 'fresh')))

    const second = post(s, `/files/sessions/${session.id}/write-batch`, {
      writes: [
        { path: 'keep.txt', contentBase64: b64('new') },
        { path: 'other.txt', contentBase64: b64('2') },
      ],
    })
    const next = await eventually(
      async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0],
    )
    writeFileSync(join(s.root, 'keep.txt'), 'changed meanwhile!')
    await s.req(`/approvals/${next.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    const result = await (await second).json()
    assert.is(result.items[0].code, 'conflict')
    assert.is(result.items[1].ok, true)
    assert.is(readFileSync(join(s.root, 'keep.txt'), 'utf8'), 'changed meanwhile!')

    const same = await post(s, `/files/sessions/${session.id}/write-batch`, {
      writes: [{ path: 'other.txt', contentBase64: b64('2') }],
    })
    assert.is((await same.json()).items[0].ok, true, 'an unchanged write needs no approval')
  } finally {
    await s.dispose()
  }
})

test('ops create directories, rename and delete, refusing to overwrite or to delete non-empty directories without recursive', async () => {
  const s = await startTestServer()
  try {
    const session = await openSession(s)
    writeFileSync(join(s.root, 'a.txt'), 'a')
    writeFileSync(join(s.root, 'b.txt'), 'b')
    const res = await (
      await post(s, `/files/sessions/${session.id}/ops`, {
        operations: [
          { type: 'mkdir', path: 'dir/sub' },
          { type: 'rename', from: 'a.txt', to: 'dir/sub/a.txt' },
          { type: 'rename', from: 'b.txt', to: 'dir/sub/a.txt' },
          { type: 'delete', path: 'dir' },
          { type: 'delete', path: 'nothing' },
          { type: 'delete', path: '../x' },
        ],
      })
    ).json()
    assert.equal(
      res.items.map((i: { ok: boolean; code?: string }) => i.code ?? 'ok'),
      ['ok', 'ok', 'invalid_operation', 'invalid_operation', 'file_not_found', 'invalid_path'],
    )
    assert.is(readFileSync(join(s.root, 'dir/sub/a.txt'), 'utf8'), 'a')
    const rec = await (
      await post(s, `/files/sessions/${session.id}/ops`, {
        operations: [{ type: 'delete', path: 'dir', recursive: true }],
      })
    ).json()
    assert.is(rec.items[0].ok, true)
    assert.not.ok(existsSync(join(s.root, 'dir')))
  } finally {
    await s.dispose()
  }
})

test('catalog snapshot pages through 10,000 files in order without gaps or duplicates', async () => {
  const s = await startTestServer({ fixture: false })
  try {
    const expected: string[] = []
    for (let d = 0; d < 20; d++) {
      const dir = `d${String(d).padStart(2, '0')}`
      mkdirSync(join(s.root, dir))
      for (let f = 0; f < 500; f++) {
        const name = `f${String(f).padStart(3, '0')}.txt`
        writeFileSync(join(s.root, dir, name), 'x')
        expected.push(`${dir}/${name}`)
      }
    }
    writeFileSync(join(s.root, '.svc-tmp-hidden'), 'temp')
    const session = await openSession(s)
    const seen: string[] = []
    let after = ''
    let pages = 0
    for (;;) {
      const page = await (
        await s.req(
          `/files/sessions/${session.id}/catalog/snapshot?limit=3000&includeDirs=false${after ? `&after=${encodeURIComponent(after)}` : ''}`,
          { token: CLIENT_TOKEN },
        )
      ).json()
      pages++
      seen.push(...page.items.map((i: { path: string }) => i.path))
      if (!page.truncated) break
      after = page.nextAfter
    }
    assert.is(pages, 4)
    assert.equal(seen, expected)
    const dirs = await (
      await s.req(`/files/sessions/${session.id}/catalog/snapshot?prefix=d01&includeDirs=true&limit=3`, {
        token: CLIENT_TOKEN,
      })
    ).json()
    assert.equal(
      dirs.items.map((i: { path: string }) => i.path),
      ['d01/f000.txt', 'd01/f001.txt', 'd01/f002.txt'],
    )
    const withDirs = await (
      await s.req(`/files/sessions/${session.id}/catalog/snapshot?includeDirs=true&limit=2`, { token: CLIENT_TOKEN })
    ).json()
    assert.equal(
      withDirs.items.map((i: { path: string; kind: string }) => `${i.kind}:${i.path}`),
      ['dir:d00', 'file:d00/f000.txt'],
    )
  } finally {
    await s.dispose()
  }
})

test('the catalog lists directories by default, as existing clients expect, and includeDirs=false leaves them out', async () => {
  const s = await startTestServer({ fixture: false })
  try {
    mkdirSync(join(s.root, 'docs'))
    writeFileSync(join(s.root, 'docs', 'a.md'), 'a')
    const session = await openSession(s)
    const list = async (query: string) =>
      (
        await (await s.req(`/files/sessions/${session.id}/catalog/snapshot${query}`, { token: CLIENT_TOKEN })).json()
      ).items.map((i: { path: string; kind: string }) => `${i.kind}:${i.path}`)
    assert.equal(await list(''), ['dir:docs', 'file:docs/a.md'])
    assert.equal(await list('?includeDirs=false'), ['file:docs/a.md'])
  } finally {
    await s.dispose()
  }
})

test('a file session created through one workspace mount is not usable through another', async () => {
  const other = tempDir('svc-mounts-')
  const [a, b] = ['wa', 'wb']
  for (const id of [a, b]) mkdirSync(join(other.path, id))
  writeFileSync(join(other.path, a, 'x.txt'), 'x')
  const workspaces = [a, b].map((id) => ({ id, path: join(other.path, id) }))
  const s = await startTestServer({ fixture: false, extraConfig: { workspaces } })
  try {
    const created = await s.req(`/w/${a}/workspace/${a}/files/sessions`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: {},
    })
    assert.is(created.status, 200)
    const { id } = (await created.json()).session
    const body = { paths: ['x.txt'] }
    const own = await s.req(`/w/${a}/files/sessions/${id}/read-batch`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: body,
    })
    assert.is(own.status, 200)
    for (const [method, path, json] of [
      ['POST', `/w/${b}/files/sessions/${id}/read-batch`, body],
      ['GET', `/w/${b}/files/sessions/${id}/catalog/snapshot`, undefined],
      ['POST', `/w/${b}/files/sessions/${id}/renew`, {}],
      ['DELETE', `/w/${b}/files/sessions/${id}`, undefined],
    ] as const) {
      const res = await s.req(path, { method, token: CLIENT_TOKEN, ...(json ? { json } : {}) })
      assert.is(res.status, 404, `${method} ${path}`)
      assert.is((await res.json()).code, 'file_session_not_found')
    }
    const stillOpen = await s.req(`/files/sessions/${id}/read-batch`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: body,
    })
    assert.is(stillOpen.status, 200, 'the unmounted path still reaches the session')
  } finally {
    await s.dispose()
    other.remove()
  }
})

test('catalog events report server writes and external touch, mv and rm, by polling and over SSE', async () => {
  const s = await startTestServer({ fixture: false, extraConfig: { files: { watchDebounceMs: 30 } } })
  try {
    const session = await openSession(s)
    const snap = await (await s.req(`/files/sessions/${session.id}/catalog/snapshot`, { token: CLIENT_TOKEN })).json()
    const sse = await s.req(`/files/sessions/${session.id}/catalog/events?since=${snap.cursor}`, {
      token: CLIENT_TOKEN,
      headers: { accept: 'text/event-stream' },
    })
    const frames = takeSse(sse, 6, 8000)
    await post(s, `/files/sessions/${session.id}/write-batch`, {
      writes: [{ path: 'notes/a.md', contentBase64: b64('a') }],
    })
    await new Promise((r) => setTimeout(r, 150))
    writeFileSync(join(s.root, 'outside-touch.txt'), 'touched')
    await new Promise((r) => setTimeout(r, 150))
    renameSync(join(s.root, 'notes/a.md'), join(s.root, 'notes/b.md'))
    await new Promise((r) => setTimeout(r, 150))
    rmSync(join(s.root, 'outside-touch.txt'))
    mkdirSync(join(s.root, 'made'))
    const polled = await eventually(
      async () => {
        const page = await (
          await s.req(`/files/sessions/${session.id}/catalog/events?since=${snap.cursor}`, { token: CLIENT_TOKEN })
        ).json()
        return page.items.length >= 6 ? page : false
      },
      5000,
      'six catalog events',
    )
    const summary = polled.items.map(
      (e: { type: string; path: string; toPath?: string; source: string }) =>
        `${e.source}:${e.type}:${e.path}${e.toPath ? `>${e.toPath}` : ''}`,
    )
    assert.equal(summary, [
      'server:mkdir:notes',
      'server:write:notes/a.md',
      'disk:write:outside-touch.txt',
      'disk:rename:notes/a.md>notes/b.md',
      'disk:delete:outside-touch.txt',
      'disk:mkdir:made',
    ])
    const streamed = await frames
    assert.equal(
      streamed.map((f) => f.event),
      ['mkdir', 'write', 'write', 'rename', 'delete', 'mkdir'],
    )
    assert.is(Number(streamed[5]!.id), polled.cursor)
    const old = await (
      await s.req(`/files/sessions/${session.id}/catalog/events?since=5`, { token: CLIENT_TOKEN })
    ).json()
    assert.is(old.resync, true, 'a cursor from before this process asks for a new snapshot')
    assert.not.ok(readdirSync(s.root).some((n) => n.startsWith('.svc-tmp-')))
  } finally {
    await s.dispose()
  }
})

test.run()
