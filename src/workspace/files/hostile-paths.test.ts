/**
 * The hostile-path corpus (`fixtures/hostile-paths/cases.json`) through every path-taking route:
 * read-batch, write-batch, ops (mkdir, delete, rename from and to), catalog prefix and after,
 * inbox upload (query, form field, file name), inbox and artifact ids (encoded and raw), and
 * import files. A canary tree outside the workspace must stay byte-for-byte unchanged, no new
 * entry may appear next to the workspace, and no response may carry the canary's content.
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/files hostile paths', { timeoutMs: 120_000 })
const CORPUS = resolve(
  import.meta.dirname ?? new URL('.', import.meta.url).pathname,
  '../../../fixtures/hostile-paths/cases.json',
)
const CANARY = 'CANARY-4242-do-not-leak'
const CANARY_DEEP = 'CANARY-DEEP-4242-do-not-leak'
const FORBIDDEN = [
  CANARY,
  CANARY_DEEP,
  Buffer.from(CANARY).toString('base64'),
  Buffer.from(CANARY_DEEP).toString('base64'),
]
const b64 = (s: string) => Buffer.from(s).toString('base64')

interface Env {
  s: TestServer
  outside: string
  session: string
}

function tree(dir: string, prefix = ''): string[] {
  const out: string[] = []
  for (const name of readdirSync(dir).sort()) {
    const abs = join(dir, name)
    const st = lstatSync(abs)
    if (st.isDirectory()) out.push(`${prefix}${name}/`, ...tree(abs, `${prefix}${name}/`))
    else
      out.push(
        `${prefix}${name}:${st.isFile() ? createHash('sha256').update(readFileSync(abs)).digest('hex') : 'link'}`,
      )
  }
  return out
}

function link(target: string, path: string): void {
  try {
    unlinkSync(path)
  } catch {
    /* absent */
  }
  try {
    rmSync(path, { recursive: true, force: true })
  } catch {
    /* absent */
  }
  symlinkSync(target, path)
}

/** (Re)plants the outside canary tree and the symlinks the corpus refers to. */
function plant(root: string, outside: string): void {
  mkdirSync(join(outside, 'sub'), { recursive: true })
  writeFileSync(join(outside, 'canary.txt'), CANARY)
  writeFileSync(join(outside, 'sub/deep.txt'), CANARY_DEEP)
  for (const dir of ['inner', '.opencode/service/inbox', '.opencode/service/outbox'])
    mkdirSync(join(root, dir), { recursive: true })
  link('../outside', join(root, 'link-out'))
  link('../outside/canary.txt', join(root, 'file-link-out'))
  link(join(outside, 'canary.txt'), join(root, 'abs-link'))
  link('../outside/new-file.txt', join(root, 'dangling-out'))
  link('loop', join(root, 'loop'))
  link('../../outside', join(root, 'inner/escape'))
  link('..', join(root, 'inner/up'))
  link('.', join(root, 'relative-dot-link'))
  link(outside, join(root, 'evil'))
  link('../../outside/sub', join(root, '.opencode/tools'))
  link(outside, join(root, '.opencode/service/inbox/evil'))
  link(outside, join(root, '.opencode/service/outbox/evil'))
  writeFileSync(join(root, 'rename-src.txt'), 'inside')
}

function cases(s: TestServer, outside: string): Array<{ category: string; path: string }> {
  const doc = JSON.parse(readFileSync(CORPUS, 'utf8')) as { cases: Array<{ category: string; path: string }> }
  return doc.cases.map((c) => ({
    ...c,
    path: c.path.replaceAll('{OUTSIDE}', outside).replaceAll('{WORKSPACE}', s.root),
  }))
}

function multipart(fields: Array<{ name: string; value: string; filename?: string }>): {
  body: Uint8Array
  type: string
} {
  const boundary = 'hostileBoundary'
  let text = ''
  for (const f of fields) {
    const fn = f.filename === undefined ? '' : `; filename="x"; filename*=UTF-8''${encodeURIComponent(f.filename)}`
    text += `--${boundary}\r\nContent-Disposition: form-data; name="${f.name}"${fn}\r\n\r\n${f.value}\r\n`
  }
  return { body: Buffer.from(`${text}--${boundary}--\r\n`), type: `multipart/form-data; boundary=${boundary}` }
}

type Probe = (env: Env, p: string) => Promise<Response>

const post = (env: Env, path: string, json: unknown) => env.s.req(path, { method: 'POST', token: CLIENT_TOKEN, json })
const upload = (env: Env, query: string, fields: Parameters<typeof multipart>[0]) => {
  const { body, type } = multipart(fields)
  return env.s.req(`/workspace/${env.s.wsId}/inbox${query}`, {
    method: 'POST',
    token: CLIENT_TOKEN,
    body: body as BodyInit,
    headers: { 'content-type': type },
  })
}

/**
 * How many corpus cases each route must refuse outright. Inbox upload paths are relative to the
 * inbox, where the corpus's symlink names do not exist, so those cases are legitimate new files
 * inside the inbox; everything else refuses nearly the whole corpus.
 */
const MIN_REFUSED: Record<string, number> = {
  'inbox upload ?path': 80,
  'inbox upload path field': 80,
  'inbox upload file name': 80,
  'catalog after': 80,
}

const PROBES: Record<string, Probe> = {
  'read-batch': (e, p) => post(e, `/files/sessions/${e.session}/read-batch`, { paths: [p] }),
  'write-batch': (e, p) =>
    post(e, `/files/sessions/${e.session}/write-batch`, { writes: [{ path: p, contentBase64: b64('HOSTILE') }] }),
  'ops mkdir': (e, p) => post(e, `/files/sessions/${e.session}/ops`, { operations: [{ type: 'mkdir', path: p }] }),
  'ops delete': (e, p) =>
    post(e, `/files/sessions/${e.session}/ops`, { operations: [{ type: 'delete', path: p, recursive: true }] }),
  'ops rename from': (e, p) =>
    post(e, `/files/sessions/${e.session}/ops`, { operations: [{ type: 'rename', from: p, to: 'renamed-away' }] }),
  'ops rename to': (e, p) =>
    post(e, `/files/sessions/${e.session}/ops`, { operations: [{ type: 'rename', from: 'rename-src.txt', to: p }] }),
  'catalog prefix': (e, p) =>
    e.s.req(`/files/sessions/${e.session}/catalog/snapshot?includeDirs=true&prefix=${encodeURIComponent(p)}`, {
      token: CLIENT_TOKEN,
    }),
  'catalog after': (e, p) =>
    e.s.req(`/files/sessions/${e.session}/catalog/snapshot?includeDirs=true&after=${encodeURIComponent(p)}`, {
      token: CLIENT_TOKEN,
    }),
  'inbox upload ?path': (e, p) =>
    upload(e, `?path=${encodeURIComponent(p)}`, [{ name: 'file', value: 'HOSTILE', filename: 'ok.txt' }]),
  'inbox upload path field': (e, p) =>
    upload(e, '', [
      { name: 'path', value: p },
      { name: 'file', value: 'HOSTILE', filename: 'ok.txt' },
    ]),
  'inbox upload file name': (e, p) => upload(e, '', [{ name: 'file', value: 'HOSTILE', filename: p }]),
  'inbox id': (e, p) =>
    e.s.req(`/workspace/${e.s.wsId}/inbox/${Buffer.from(p).toString('base64url') || 'x'}`, { token: CLIENT_TOKEN }),
  'inbox raw id': (e, p) =>
    e.s.req(`/workspace/${e.s.wsId}/inbox/${encodeURIComponent(p) || 'x'}`, { token: CLIENT_TOKEN }),
  'artifact id': (e, p) =>
    e.s.req(`/workspace/${e.s.wsId}/artifacts/${Buffer.from(p).toString('base64url') || 'x'}`, { token: CLIENT_TOKEN }),
  'artifact raw id': (e, p) =>
    e.s.req(`/workspace/${e.s.wsId}/artifacts/${encodeURIComponent(p) || 'x'}`, { token: CLIENT_TOKEN }),
  'import files': async (e, p) => {
    const body = {
      files: [
        { path: p, content: 'HOSTILE' },
        { path: `.opencode/agents/${p}`, content: 'HOSTILE' },
      ],
    }
    const preview = await post(e, `/workspace/${e.s.wsId}/import/preview`, body)
    if (preview.status !== 200) return preview
    const fingerprint = (await preview.json()).fingerprint
    return post(e, `/workspace/${e.s.wsId}/import`, { ...body, previewFingerprint: fingerprint })
  },
}

/** Runs a shell loop in its own process (true parallelism with the server's file work); returns a stopper. */
function swapLoop(script: string): () => Promise<void> {
  const child = spawn('sh', ['-c', `while true; do ${script}; done`], { stdio: 'ignore' })
  return async () => {
    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGKILL')
    await exited
  }
}

async function withEnv(fn: (env: Env) => Promise<void>): Promise<void> {
  const s = await startTestServer({ fixture: false, extraConfig: { inbox: { requireApproval: false } }, watch: false })
  try {
    const outside = join(s.dir, 'outside')
    plant(s.root, outside)
    const session = (
      await (
        await s.req(`/workspace/${s.wsId}/files/sessions`, { method: 'POST', token: CLIENT_TOKEN, json: {} })
      ).json()
    ).session.id
    await fn({ s, outside, session })
  } finally {
    await s.dispose()
  }
}

test('the corpus has at least 100 cases across every category the issue names', () => {
  const doc = JSON.parse(readFileSync(CORPUS, 'utf8')) as { cases: Array<{ category: string }> }
  assert.ok(doc.cases.length >= 100, `${doc.cases.length} cases`)
  const categories = new Set(doc.cases.map((c) => c.category))
  for (const c of [
    'traversal',
    'percent-encoding',
    'unicode',
    'control-characters',
    'backslash',
    'absolute',
    'drive-letter',
    'device-name',
    'over-long',
    'symlink',
  ])
    assert.ok(categories.has(c), c)
})

for (const [route, probe] of Object.entries(PROBES)) {
  test(`${route}: no hostile path reads or writes outside the workspace`, async () => {
    await withEnv(async (env) => {
      const before = tree(env.outside)
      const beside = readdirSync(env.s.dir).sort()
      let refused = 0
      for (const c of cases(env.s, env.outside)) {
        plant(env.s.root, env.outside)
        const res = await probe(env, c.path)
        const text = await res.text()
        const label = `${route} ${c.category} ${JSON.stringify(c.path).slice(0, 80)}`
        for (const secret of FORBIDDEN) assert.not.ok(text.includes(secret), `${label}: response leaks the canary`)
        assert.ok(
          res.status < 500 || text.includes('import_failed'),
          `${label}: status ${res.status} ${text.slice(0, 200)}`,
        )
        assert.equal(tree(env.outside), before, `${label}: the outside tree changed`)
        assert.equal(readdirSync(env.s.dir).sort(), beside, `${label}: a new entry appeared next to the workspace`)
        if (res.status >= 400 || /"ok":false|"code":"(invalid_path|file_not_found)"/.test(text)) refused++
      }
      assert.ok(refused >= (MIN_REFUSED[route] ?? 90), `${route}: only ${refused} cases were refused`)
    })
  })
}

test('a symlinked inbox or outbox folder is never written through or read through', async () => {
  await withEnv(async (env) => {
    const before = tree(env.outside)
    rmSync(join(env.s.root, '.opencode/service'), { recursive: true, force: true })
    mkdirSync(join(env.s.root, '.opencode/service'), { recursive: true })
    symlinkSync(env.outside, join(env.s.root, '.opencode/service/inbox'))
    symlinkSync(env.outside, join(env.s.root, '.opencode/service/outbox'))
    const res = await upload(env, '?path=new.txt', [{ name: 'file', value: 'HOSTILE', filename: 'ok.txt' }])
    assert.equal([res.status, (await res.json()).code], [400, 'invalid_path'])
    assert.equal(await (await env.s.req(`/workspace/${env.s.wsId}/inbox`, { token: CLIENT_TOKEN })).json(), {
      items: [],
    })
    assert.equal(await (await env.s.req(`/workspace/${env.s.wsId}/artifacts`, { token: CLIENT_TOKEN })).json(), {
      items: [],
    })
    assert.is(
      (
        await env.s.req(`/workspace/${env.s.wsId}/artifacts/${Buffer.from('canary.txt').toString('base64url')}`, {
          token: CLIENT_TOKEN,
        })
      ).status,
      404,
    )
    assert.equal(tree(env.outside), before)
  })
})

test('reads racing a file being swapped for a symlink to the canary never return the canary', async () => {
  await withEnv(async (env) => {
    const target = join(env.s.root, 'race.txt')
    writeFileSync(target, 'inside content')
    const q = (p: string) => `'${p}'`
    const stop = swapLoop(
      `mv -f ${q(target)} ${q(target + '.real')}; ln -s ${q(join(env.outside, 'canary.txt'))} ${q(target)}; rm -f ${q(target)}; mv -f ${q(target + '.real')} ${q(target)}`,
    )
    let ok = 0
    try {
      for (let i = 0; i < 400; i++) {
        const text = await (
          await post(env, `/files/sessions/${env.session}/read-batch`, { paths: ['race.txt', 'race.txt', 'race.txt'] })
        ).text()
        for (const secret of FORBIDDEN) assert.not.ok(text.includes(secret), 'a racing read returned the canary')
        ok += (text.match(/"ok":true/g) ?? []).length
      }
    } finally {
      await stop()
    }
    assert.ok(ok > 0, 'some reads saw the real file')
  })
})

test('writes racing a parent directory being swapped for a symlink out never land outside', async () => {
  await withEnv(async (env) => {
    const before = tree(env.outside)
    const dir = join(env.s.root, 'swap')
    mkdirSync(dir)
    const q = (p: string) => `'${p}'`
    const stop = swapLoop(
      `mv ${q(dir)} ${q(dir + '-real')} && ln -s ${q(env.outside)} ${q(dir)}; rm -f ${q(dir)}; [ -d ${q(dir + '-real')} ] && mv ${q(dir + '-real')} ${q(dir)}`,
    )
    let written = 0
    try {
      for (let i = 0; i < 150; i++) {
        const res = await (
          await post(env, `/files/sessions/${env.session}/write-batch`, {
            writes: [
              { path: `swap/f${i % 5}.txt`, contentBase64: b64(`HOSTILE ${i}`), force: true },
              { path: `swap/new/g${i}.txt`, contentBase64: b64('HOSTILE'), force: true },
            ],
          })
        ).json()
        written += res.items.filter((x: { ok: boolean }) => x.ok).length
        assert.equal(tree(env.outside), before, `iteration ${i}: the outside tree changed`)
      }
    } finally {
      await stop()
      if (!existsSync(dir) && existsSync(`${dir}-real`)) renameSync(`${dir}-real`, dir)
    }
    assert.ok(written > 0, 'some writes landed in the real directory')
    assert.equal(tree(env.outside), before)
  })
})

test.run()
