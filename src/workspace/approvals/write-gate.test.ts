import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'
import { unifiedDiff } from '../../core/unified-diff.ts'
import { TEMP_PREFIX } from '../../storage/fs.ts'

const test = suite('workspace/write gate: every writer', { timeoutMs: 60_000 })

const send = (s: TestServer, method: string, path: string, json?: unknown) =>
  s.req(`/workspace/${s.wsId}${path}`, { method, token: CLIENT_TOKEN, json })

function multipart(name: string, data: string): { body: Uint8Array; type: string } {
  const boundary = 'gateBoundary7'
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n${data}\r\n--${boundary}--\r\n`,
  )
  return { body, type: `multipart/form-data; boundary=${boundary}` }
}

/** One workspace writer, as a client reaches it. */
interface Writer {
  name: string
  /** Approval and audit action. */
  action: string
  /** Workspace-relative file the write changes. */
  file: string
  /** A line the diff must add. */
  added: string
  /** Workspace-relative directory (or file) that, linked outside, must make the write refuse. */
  escape: string
  write(s: TestServer): Promise<Response>
}

const IMPORT = { files: [{ path: '.opencode/agents/gate-helper.md', content: 'You help the gate test.\n' }] }

const writers: Writer[] = [
  {
    name: 'file session write',
    action: 'workspace.files.session.write',
    file: 'notes/todo.md',
    added: '+remember the gate',
    escape: 'notes',
    async write(s) {
      const session = (await (await send(s, 'POST', '/files/sessions', { write: true })).json()).session
      return s.req(`/files/sessions/${session.id}/write-batch`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        json: {
          writes: [{ path: 'notes/todo.md', contentBase64: Buffer.from('remember the gate\n').toString('base64') }],
        },
      })
    },
  },
  {
    name: 'inbox upload',
    action: 'workspace.inbox.upload',
    file: '.opencode/service/inbox/brief.txt',
    added: '+the uploaded brief',
    escape: '.opencode/service/inbox',
    write(s) {
      const { body, type } = multipart('brief.txt', 'the uploaded brief\n')
      return s.req(`/workspace/${s.wsId}/inbox`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        body: body as BodyInit,
        headers: { 'content-type': type },
      })
    },
  },
  {
    name: 'import apply',
    action: 'config.import',
    file: '.opencode/agents/gate-helper.md',
    added: '+You help the gate test.',
    escape: '.opencode/agents',
    async write(s) {
      const preview = await send(s, 'POST', '/import/preview', IMPORT)
      if (preview.status !== 200) return preview
      return send(s, 'POST', '/import', { ...IMPORT, previewFingerprint: (await preview.json()).fingerprint })
    },
  },
  {
    name: 'skill',
    action: 'skills.upsert',
    file: '.opencode/skills/gate-skill/SKILL.md',
    added: '+Check the gate.',
    escape: '.opencode/skills',
    write: (s) =>
      send(s, 'POST', '/skills', {
        name: 'gate-skill',
        content: '---\nname: gate-skill\ndescription: Gate test\n---\nCheck the gate.\n',
      }),
  },
  {
    name: 'command',
    action: 'commands.upsert',
    file: '.opencode/commands/gate-cmd.md',
    added: '+Run the gate check',
    escape: '.opencode/commands',
    write: (s) => send(s, 'POST', '/commands', { name: 'gate-cmd', template: 'Run the gate check' }),
  },
  {
    name: 'MCP',
    action: 'mcp.add',
    file: 'opencode.jsonc',
    added: '"gate-mcp"',
    escape: 'opencode.jsonc',
    write: (s) =>
      send(s, 'POST', '/mcp', {
        name: 'gate-mcp',
        config: {
          type: 'remote',
          url: 'https://gate.example/sse',
          headers: { Authorization: 'Bearer gate-secret-header-value' },
        },
      }),
  },
  {
    name: 'config',
    action: 'config.patch',
    file: 'opencode.jsonc',
    added: '"model": "gate/model"',
    escape: 'opencode.jsonc',
    write: (s) => send(s, 'PATCH', '/config', { opencode: { model: 'gate/model' } }),
  },
  {
    name: 'plugin',
    action: 'plugins.add',
    file: 'opencode.jsonc',
    added: 'gate-plugin@1.0.0',
    escape: 'opencode.jsonc',
    write: (s) => send(s, 'POST', '/plugins', { spec: 'gate-plugin@1.0.0' }),
  },
]

const read = (s: TestServer, rel: string) =>
  existsSync(join(s.root, rel)) ? readFileSync(join(s.root, rel), 'utf8') : null

/** Every file under `dir` with its content (server temp files aside), for "nothing changed" checks. */
function tree(dir: string, at = ''): Record<string, string> {
  const out: Record<string, string> = {}
  if (!existsSync(dir)) return out
  for (const entry of readdirSync(join(dir, at), { withFileTypes: true })) {
    const rel = at ? `${at}/${entry.name}` : entry.name
    // A held upload waits staged under a hidden temp name; it is not workspace content.
    if (entry.name.startsWith(TEMP_PREFIX)) continue
    if (entry.isDirectory()) Object.assign(out, tree(dir, rel))
    else if (entry.isFile()) out[rel] = readFileSync(join(dir, rel), 'utf8')
  }
  return out
}

const pending = (s: TestServer) =>
  eventually(async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0])

const audit = async (s: TestServer) =>
  (await (await send(s, 'GET', '/audit?limit=200')).json()).items as Array<{ action: string }>

type Change = { path: string; action: string; diff?: string; masked?: boolean }

for (const w of writers) {
  test(`${w.name}: manual mode holds the write and describes it; deny changes nothing`, async () => {
    const s = await startTestServer({ approval: 'manual' })
    try {
      const before = tree(s.root)
      const write = w.write(s)
      const approval = await pending(s)
      assert.is(approval.action, w.action)
      const change = (approval.changes as Change[]).find((c) => c.path === w.file)
      assert.ok(change, `the approval describes ${w.file}: ${JSON.stringify(approval.changes)}`)
      assert.is(change?.action, read(s, w.file) === null ? 'create' : 'update')
      assert.ok(change?.diff?.includes(w.added), `the diff adds ${w.added}: ${change?.diff}`)
      const text = JSON.stringify(approval)
      assert.not.ok(/secret-(env|header)-value/.test(text), 'MCP secret values never reach the approval')
      assert.equal(tree(s.root), before, 'nothing is written while the write is held')
      await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
      const res = await write
      assert.equal([res.status, (await res.json()).code], [403, 'write_denied'])
      assert.equal(tree(s.root), before, 'a denied write changes nothing')
      const actions = (await audit(s)).map((e) => e.action)
      assert.ok(actions.includes('approval.deny'))
      assert.not.ok(actions.includes(w.action), 'a denied write is not audited as done')
    } finally {
      await s.dispose()
    }
  })

  test(`${w.name}: allowed, it applies and records its approval events and audit entry`, async () => {
    const s = await startTestServer({ approval: 'manual' })
    try {
      const write = w.write(s)
      const approval = await pending(s)
      await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
      const res = await write
      assert.is(res.status, 200, await res.clone().text())
      assert.ok(read(s, w.file)?.includes(w.added.replace(/^\+/, '').replace(/^"|"$/g, '').split('"')[0]!))
      const events = (await (await send(s, 'GET', '/events?since=0&limit=1000')).json()).items as Array<{
        type: string
        approval?: { id: string; changes?: Change[] }
      }>
      const requested = events.find((e) => e.type === 'approval.requested' && e.approval?.id === approval.id)
      assert.ok(requested?.approval?.changes?.some((c) => c.path === w.file && c.diff?.includes(w.added)))
      assert.ok(events.some((e) => e.type === 'approval.decided' && e.approval?.id === approval.id))
      assert.ok(
        (await audit(s)).some((e) => e.action === w.action),
        `audit has ${w.action}`,
      )
    } finally {
      await s.dispose()
    }
  })

  test(`${w.name}: auto mode applies at once and audits`, async () => {
    const s = await startTestServer({ approval: 'auto' })
    try {
      const before = read(s, w.file)
      const res = await w.write(s)
      assert.is(res.status, 200, await res.clone().text())
      assert.is.not(read(s, w.file), before)
      assert.ok((await audit(s)).some((e) => e.action === w.action))
    } finally {
      await s.dispose()
    }
  })

  test(`${w.name}: a symlink leading out of the workspace is refused and nothing outside changes`, async () => {
    const s = await startTestServer({ approval: 'auto' })
    const out = tempDir('svc-gate-outside-')
    try {
      const inside = join(s.root, w.escape)
      const outside = join(out.path, 'target')
      if (existsSync(inside)) {
        cpSync(inside, outside, { recursive: true })
        rmSync(inside, { recursive: true })
      } else mkdirSync(outside, { recursive: true })
      mkdirSync(dirname(inside), { recursive: true })
      symlinkSync(outside, inside)
      const before = tree(out.path)
      const res = await w.write(s)
      const body = await res.json()
      const code = res.status === 200 ? body.items?.[0]?.code : body.code
      assert.is(code, 'invalid_path', `${res.status} ${JSON.stringify(body)}`)
      assert.equal(tree(out.path), before, 'nothing outside the workspace changed')
      assert.not.ok(
        (await audit(s)).some((e) => e.action === w.action),
        'a refused write is not audited as done',
      )
    } finally {
      out.remove()
      await s.dispose()
    }
  })
}

test('an MCP header change is described with its value masked, and the secret stays out of the approval', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const write = send(s, 'PATCH', '/config', {
      opencode: {
        mcp: {
          tracker: {
            type: 'remote',
            url: 'https://user:pw-secret@mcp.example.com/sse',
            headers: { Authorization: 'Bearer rotated-secret-value' },
          },
        },
      },
    })
    const approval = await pending(s)
    const change = (approval.changes as Change[])[0]!
    assert.is(change.masked, true)
    assert.ok(change.diff?.includes('"Authorization": "********"'), change.diff)
    assert.not.ok(/rotated-secret-value|pw-secret|fixture-secret/.test(JSON.stringify(approval)))
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    assert.is((await write).status, 403)
  } finally {
    await s.dispose()
  }
})

test("a skill file's execute bit flip is described even though its bytes stay the same", async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const skill = (executable: boolean) => ({
      name: 'gate-bits',
      content: '---\nname: gate-bits\ndescription: Bits\n---\nRun it.\n',
      files: [{ path: 'run.sh', content: 'echo gate\n', executable }],
    })
    for (const executable of [false, true]) {
      const write = send(s, 'POST', '/skills', skill(executable))
      const approval = await pending(s)
      if (executable) {
        const change = (approval.changes as Array<Change & { executable?: unknown }>).find((c) =>
          c.path.endsWith('/run.sh'),
        )
        assert.equal([change?.action, change?.executable], ['update', { before: false, after: true }])
      }
      await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
      assert.is((await write).status, 200)
    }
  } finally {
    await s.dispose()
  }
})

test('a new executable skill file is marked executable in the approval; a new plain one is not', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const write = send(s, 'POST', '/skills', {
      name: 'gate-new-bits',
      content: '---\nname: gate-new-bits\ndescription: Bits\n---\nRun it.\n',
      files: [
        { path: 'run.sh', content: 'echo gate\n', executable: true },
        { path: 'notes.md', content: 'plain\n' },
      ],
    })
    const approval = await pending(s)
    const changes = approval.changes as Array<Change & { executable?: unknown }>
    const script = changes.find((c) => c.path.endsWith('/run.sh'))
    assert.equal([script?.action, script?.executable], ['create', { before: false, after: true }])
    const notes = changes.find((c) => c.path.endsWith('/notes.md'))
    assert.equal([notes?.action, notes?.executable], ['create', undefined])
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    assert.is((await write).status, 200)
  } finally {
    await s.dispose()
  }
})

test('binary and large content is described by size and sha256 instead of a diff', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const session = (await (await send(s, 'POST', '/files/sessions', { write: true })).json()).session
    const binary = Buffer.from([0, 1, 2, 255, 0, 9])
    const large = Buffer.from('x'.repeat(70 * 1024))
    const write = s.req(`/files/sessions/${session.id}/write-batch`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: {
        writes: [
          { path: 'blob.bin', contentBase64: binary.toString('base64') },
          { path: 'big.txt', contentBase64: large.toString('base64') },
        ],
      },
    })
    const approval = await pending(s)
    const byPath = Object.fromEntries(
      (approval.changes as Array<Change & Record<string, unknown>>).map((c) => [c.path, c]),
    )
    assert.equal(
      [byPath['blob.bin']?.diffOmitted, byPath['blob.bin']?.after],
      ['binary', { bytes: 6, sha256: createHash('sha256').update(binary).digest('hex') }],
    )
    assert.equal(
      [byPath['big.txt']?.diffOmitted, (byPath['big.txt']?.after as { bytes: number } | undefined)?.bytes],
      ['too_large', large.byteLength],
    )
    assert.is(byPath['big.txt']?.diff, undefined)
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    assert.is((await write).status, 200)
  } finally {
    await s.dispose()
  }
})

test('unified diffs read like diff -u: hunks with context, creations from /dev/null, a missing final newline marked', () => {
  const before = 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n'
  const after = 'a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk'
  assert.is(
    unifiedDiff('x.txt', before, after),
    [
      '--- a/x.txt',
      '+++ b/x.txt',
      '@@ -1,5 +1,5 @@',
      ' a',
      '-b',
      '+B',
      ' c',
      ' d',
      ' e',
      '@@ -8,3 +8,4 @@',
      ' h',
      ' i',
      ' j',
      '+k',
      '\\ No newline at end of file',
      '',
    ].join('\n'),
  )
  assert.is(unifiedDiff('n.txt', null, 'new\n'), '--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+new\n')
  assert.is(unifiedDiff('same.txt', 'x\n', 'x\n'), '')
  const many = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n')
  assert.is(unifiedDiff('m.txt', many, many.toUpperCase(), { maxEdits: 10 }), null)
})

test.run()
