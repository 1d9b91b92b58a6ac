import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'
import { multipartBoundary, readMultipart } from './multipart-stream.ts'

const test = suite('workspace/inbox and artifacts', { timeoutMs: 30_000 })

function multipart(
  parts: Array<{ name: string; filename?: string; data: string | Uint8Array }>,
  boundary = 'svcBoundary42',
): { body: Uint8Array; type: string } {
  const chunks: Buffer[] = []
  for (const p of parts) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n${p.filename !== undefined ? 'Content-Type: application/octet-stream\r\n' : ''}\r\n`,
      ),
    )
    chunks.push(Buffer.from(p.data))
    chunks.push(Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` }
}

const upload = (s: TestServer, parts: Parameters<typeof multipart>[0], query = '') => {
  const { body, type } = multipart(parts)
  return s.req(`/workspace/${s.wsId}/inbox${query}`, {
    method: 'POST',
    token: CLIENT_TOKEN,
    body: body as BodyInit,
    headers: { 'content-type': type },
  })
}

test('the multipart reader streams parts split at every possible chunk boundary', async () => {
  const payload = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 251))
  const { body, type } = multipart([
    { name: 'path', data: 'a/b.bin' },
    { name: 'file', filename: 'x.bin', data: payload },
    { name: 'tail', data: 'z' },
  ])
  for (const size of [1, 2, 7, 64, 1000, body.length]) {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < body.length; i += size) c.enqueue(body.subarray(i, i + size))
        c.close()
      },
    })
    const fields: Record<string, string> = {}
    let file = Buffer.alloc(0)
    await readMultipart(stream, multipartBoundary(type)!, {
      onField: (n, v) => {
        fields[n] = v
      },
      onFile: async (_info, data) => {
        for await (const c of data) file = Buffer.concat([file, c])
      },
    })
    assert.equal(fields, { path: 'a/b.bin', tail: 'z' }, `chunk ${size}`)
    assert.ok(file.equals(payload), `chunk ${size}`)
  }
})

test('uploads land in the inbox, list with ids, and download whole or by range', async () => {
  const s = await startTestServer({ extraConfig: { inbox: { requireApproval: false } } })
  try {
    const res = await upload(s, [
      { name: 'file', filename: 'report.txt', data: '0123456789' },
      { name: 'path', data: 'reports/q1.txt' },
    ])
    assert.is(res.status, 200)
    assert.equal(await res.json(), { ok: true, path: 'reports/q1.txt', bytes: 10 })
    assert.is(readFileSync(join(s.root, '.opencode/service/inbox/reports/q1.txt'), 'utf8'), '0123456789')
    const byQuery = await upload(s, [{ name: 'file', filename: 'ignored.txt', data: 'q' }], '?path=from-query.txt')
    assert.is((await byQuery.json()).path, 'from-query.txt')
    const list = await (await s.req(`/workspace/${s.wsId}/inbox`, { token: CLIENT_TOKEN })).json()
    assert.equal(list.items.map((i: { path: string }) => i.path).sort(), ['from-query.txt', 'reports/q1.txt'])
    const item = list.items.find((i: { path: string }) => i.path === 'reports/q1.txt')
    const whole = await s.req(`/workspace/${s.wsId}/inbox/${item.id}`, { token: CLIENT_TOKEN })
    assert.equal([whole.status, whole.headers.get('content-length'), await whole.text()], [200, '10', '0123456789'])
    assert.match(whole.headers.get('content-disposition')!, /attachment; filename="q1.txt"/)
    const part = await s.req(`/workspace/${s.wsId}/inbox/${item.id}`, {
      token: CLIENT_TOKEN,
      headers: { range: 'bytes=2-4' },
    })
    assert.equal([part.status, part.headers.get('content-range'), await part.text()], [206, 'bytes 2-4/10', '234'])
    const audit = await (await s.req(`/workspace/${s.wsId}/audit`, { token: CLIENT_TOKEN })).json()
    assert.ok(audit.items.some((e: { action: string }) => e.action === 'workspace.inbox.upload'))
  } finally {
    await s.dispose()
  }
})

test('oversize, missing-file, wrong-type and malformed uploads are refused and leave nothing behind', async () => {
  const s = await startTestServer({ extraConfig: { inbox: { requireApproval: false, maxBytes: 1000 } } })
  try {
    const big = await upload(s, [{ name: 'file', filename: 'big.bin', data: Buffer.alloc(1500) }])
    assert.is(big.status, 413)
    const body = await big.json()
    assert.equal([body.code, body.details.maxBytes], ['file_too_large', 1000])
    assert.ok(body.details.size > 1000)
    const declared = await s.req(`/workspace/${s.wsId}/inbox`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      body: Buffer.alloc(200_000),
      headers: { 'content-type': 'multipart/form-data; boundary=x', 'content-length': '200000' },
    })
    assert.equal([declared.status, (await declared.json()).details.size], [413, 200_000])
    const noFile = await upload(s, [{ name: 'path', data: 'x.txt' }])
    assert.equal([noFile.status, (await noFile.json()).code], [400, 'file_required'])
    const json = await s.req(`/workspace/${s.wsId}/inbox`, { method: 'POST', token: CLIENT_TOKEN, json: { file: 'x' } })
    assert.equal([json.status, (await json.json()).code], [400, 'invalid_payload'])
    const truncated = await s.req(`/workspace/${s.wsId}/inbox`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      body: '--b\r\nContent-Disposition: form-data; name="file"; filename="t"\r\n\r\nabc',
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    })
    assert.equal([truncated.status, (await truncated.json()).code], [400, 'invalid_payload'])
    const inbox = join(s.root, '.opencode/service/inbox')
    assert.equal(existsSync(inbox) ? readdirSync(inbox) : [], [])
  } finally {
    await s.dispose()
  }
})

test('an upload onto a symlink in the inbox is refused and the file it points to elsewhere in the workspace is unchanged', async () => {
  const s = await startTestServer({ extraConfig: { inbox: { requireApproval: false } } })
  try {
    const inbox = join(s.root, '.opencode/service/inbox')
    mkdirSync(join(inbox, 'real'), { recursive: true })
    const config = join(s.root, 'opencode.jsonc')
    const before = readFileSync(config, 'utf8')
    symlinkSync('../../../opencode.jsonc', join(inbox, 'notes.txt'))
    const link = await upload(s, [{ name: 'file', filename: 'notes.txt', data: '{ "plugin": ["attacker-plugin"] }\n' }])
    assert.equal([link.status, (await link.json()).code], [409, 'inbox_target_not_regular'])
    assert.is(readFileSync(config, 'utf8'), before)
    assert.ok(lstatSync(join(inbox, 'notes.txt')).isSymbolicLink(), 'the link itself is left as it was')
    // A symlinked directory leading out of the inbox (still inside the workspace) is refused too.
    symlinkSync('../../..', join(inbox, 'up'))
    const parent = await upload(s, [{ name: 'file', filename: 'x.txt', data: 'smuggled' }], '?path=up/smuggled.txt')
    assert.equal([parent.status, (await parent.json()).code], [400, 'invalid_path'])
    assert.not.ok(existsSync(join(s.root, 'smuggled.txt')))
    // A symlinked directory that stays inside the inbox still works, as downloads follow it.
    symlinkSync('real', join(inbox, 'alias'))
    const inside = await upload(s, [{ name: 'file', filename: 'ok.txt', data: 'fine' }], '?path=alias/ok.txt')
    assert.equal([inside.status, (await inside.json()).path], [200, 'alias/ok.txt'])
    assert.is(readFileSync(join(inbox, 'real/ok.txt'), 'utf8'), 'fine')
    assert.equal(readdirSync(inbox).sort(), ['alias', 'notes.txt', 'real', 'up'])
  } finally {
    await s.dispose()
  }
})

test('a multipart body whose extra parts exceed maxBytes is answered 413 and leaves no file behind', async () => {
  const s = await startTestServer({ extraConfig: { inbox: { requireApproval: false, maxBytes: 1000 } } })
  try {
    const boundary = 'svcBoundary42'
    const head = (name: string, filename?: string) =>
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ''}\r\n\r\n`,
      )
    const total = 8 << 20
    // No Content-Length (a streamed body), so only counting what is read can stop it.
    const send = async (chunks: () => Generator<Uint8Array>) => {
      let pulled = 0
      const it = chunks()
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          const next = it.next()
          if (next.done) {
            c.close()
            return
          }
          pulled += next.value.byteLength
          c.enqueue(next.value)
        },
      })
      const res = await s.req(`/workspace/${s.wsId}/inbox`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        duplex: 'half',
      } as RequestInit)
      return { res, pulled }
    }
    // A small `file` part, then a large ignored file part.
    const junkFile = await send(function* () {
      yield Buffer.concat([head('file', 'a.txt'), Buffer.from('small\r\n'), head('junk', 'j.bin')])
      for (let sent = 0; sent < total; sent += 64 * 1024) yield Buffer.alloc(64 * 1024, 65)
      yield Buffer.from(`\r\n--${boundary}--\r\n`)
    })
    // A small `file` part, then many small fields (each under the per-field cap).
    const manyFields = await send(function* () {
      yield Buffer.concat([head('file', 'b.txt'), Buffer.from('small\r\n')])
      for (let sent = 0; sent < total; sent += 32 * 1024)
        yield Buffer.concat([head('pad'), Buffer.alloc(32 * 1024, 66), Buffer.from('\r\n')])
      yield Buffer.from(`--${boundary}--\r\n`)
    })
    for (const { res, pulled } of [junkFile, manyFields]) {
      const body = await res.json()
      assert.equal([res.status, body.code, body.details?.maxBytes], [413, 'file_too_large', 1000])
      assert.ok(body.details.size > 1000)
      assert.ok(pulled < total / 2, `stopped reading early (read ${pulled} bytes)`)
    }
    const inbox = join(s.root, '.opencode/service/inbox')
    assert.equal(existsSync(inbox) ? readdirSync(inbox) : [], [])
  } finally {
    await s.dispose()
  }
})

test('uploads wait for approval by default and a denied upload leaves no file', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const pending = upload(s, [{ name: 'file', filename: 'held.txt', data: 'held' }])
    const approval = await eventually(
      async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0],
    )
    assert.is(approval.action, 'workspace.inbox.upload')
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    assert.is((await pending).status, 403)
    assert.equal(readdirSync(join(s.root, '.opencode/service/inbox')), [])
    const viewer = (
      await (await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope: 'viewer' } })).json()
    ).token
    const { body, type } = multipart([{ name: 'file', filename: 'v.txt', data: 'v' }])
    assert.is(
      (
        await s.req(`/workspace/${s.wsId}/inbox`, {
          method: 'POST',
          token: viewer,
          body: body as BodyInit,
          headers: { 'content-type': type },
        })
      ).status,
      403,
    )
  } finally {
    await s.dispose()
  }
})

test('artifacts list newest first and download with ranges; unsatisfiable ranges answer 416; disabled folders say so', async () => {
  const s = await startTestServer()
  const off = await startTestServer({ extraConfig: { inbox: { enabled: false }, outbox: { enabled: false } } })
  try {
    const outbox = join(s.root, '.opencode/service/outbox')
    mkdirSync(join(outbox, 'charts'), { recursive: true })
    writeFileSync(join(outbox, 'charts/plot data.csv'), 'a,b\n1,2\n')
    writeFileSync(join(outbox, 'résumé.md'), '# hi')
    const list = await (await s.req(`/workspace/${s.wsId}/artifacts`, { token: CLIENT_TOKEN })).json()
    assert.equal(list.items.map((i: { path: string }) => i.path).sort(), ['charts/plot data.csv', 'résumé.md'])
    const csv = list.items.find((i: { path: string }) => i.path === 'charts/plot data.csv')
    const res = await s.req(`/workspace/${s.wsId}/artifacts/${csv.id}`, { token: CLIENT_TOKEN })
    assert.equal(
      [res.status, res.headers.get('content-length'), res.headers.get('accept-ranges'), await res.text()],
      [200, '8', 'bytes', 'a,b\n1,2\n'],
    )
    const md = list.items.find((i: { path: string }) => i.path === 'résumé.md')
    const mdRes = await s.req(`/workspace/${s.wsId}/artifacts/${md.id}`, {
      token: CLIENT_TOKEN,
      headers: { range: 'bytes=-2' },
    })
    assert.equal([mdRes.status, mdRes.headers.get('content-range'), await mdRes.text()], [206, 'bytes 2-3/4', 'hi'])
    assert.match(mdRes.headers.get('content-disposition')!, /filename\*=UTF-8''r%C3%A9sum%C3%A9\.md/)
    const open = await s.req(`/workspace/${s.wsId}/artifacts/${csv.id}`, {
      token: CLIENT_TOKEN,
      headers: { range: 'bytes=4-' },
    })
    assert.equal([open.status, await open.text()], [206, '1,2\n'])
    const bad = await s.req(`/workspace/${s.wsId}/artifacts/${csv.id}`, {
      token: CLIENT_TOKEN,
      headers: { range: 'bytes=100-200' },
    })
    assert.equal([bad.status, bad.headers.get('content-range')], [416, 'bytes */8'])
    assert.is((await s.req(`/workspace/${s.wsId}/artifacts/bm9wZQ`, { token: CLIENT_TOKEN })).status, 404)
    assert.is(
      (await s.req(`/workspace/${s.wsId}/artifacts/${encodeURIComponent('***')}`, { token: CLIENT_TOKEN })).status,
      400,
    )
    assert.equal(await (await off.req(`/workspace/${off.wsId}/artifacts`, { token: CLIENT_TOKEN })).json(), {
      items: [],
    })
    assert.is(
      (await (await off.req(`/workspace/${off.wsId}/inbox`, { token: CLIENT_TOKEN })).json()).code,
      'inbox_disabled',
    )
    assert.is(
      (await (await off.req(`/workspace/${off.wsId}/artifacts/${csv.id}`, { token: CLIENT_TOKEN })).json()).code,
      'outbox_disabled',
    )
  } finally {
    await s.dispose()
    await off.dispose()
  }
})

test.run()
