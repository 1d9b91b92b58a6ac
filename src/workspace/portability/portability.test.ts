import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'
import { importFailure } from './import-apply.ts'
import { findSecrets, stripSecrets } from './secret-scan.ts'

const test = suite('workspace/export and import', { timeoutMs: 30_000 })

const exportOf = async (s: TestServer, sensitive?: string) =>
  s.req(`/workspace/${s.wsId}/export${sensitive ? `?sensitive=${sensitive}` : ''}`, { token: CLIENT_TOKEN })
const preview = async (s: TestServer, body: unknown) =>
  (await s.req(`/workspace/${s.wsId}/import/preview`, { method: 'POST', token: CLIENT_TOKEN, json: body })).json()
const importWith = (s: TestServer, body: unknown) =>
  s.req(`/workspace/${s.wsId}/import`, { method: 'POST', token: CLIENT_TOKEN, json: body })
const strip = ({ workspaceId: _w, exportedAt: _e, ...rest }: Record<string, unknown>) => rest

test('secret detection: references stay, literals and credential-shaped values are flagged and stripped', () => {
  const config = {
    local: { environment: { API_KEY: 'literal-value-123', OTHER: '{env:OTHER}' } },
    remote: { headers: { Authorization: 'Bearer abcdefgh12345678' }, url: 'https://x.example/sse' },
    pat: 'ghp_abcdefghijklmnopqrstuv',
  }
  assert.equal(findSecrets(config).sort(), ['local.environment.API_KEY', 'pat', 'remote.headers.Authorization'])
  assert.equal(stripSecrets(config), {
    local: { environment: { OTHER: '{env:OTHER}' } },
    remote: { headers: {}, url: 'https://x.example/sse' },
  })
})

test('export asks for a decision when secrets are present, and exclude strips them while include keeps them', async () => {
  const s = await startTestServer()
  try {
    mkdirSync(join(s.root, '.opencode/tools'), { recursive: true })
    writeFileSync(join(s.root, '.opencode/tools/run.ts'), 'export const run = () => 1\n')
    writeFileSync(join(s.root, '.opencode/plugins/leaky.ts'), 'const apiKey = "sk-live-0123456789abcdefghij"\n')
    writeFileSync(join(s.root, '.opencode/plugins/.env'), 'TOKEN=x\n')
    const auto = await exportOf(s)
    assert.is(auto.status, 409)
    const body = await auto.json()
    assert.is(body.code, 'workspace_export_requires_decision')
    assert.equal(
      body.details.warnings.map((w: { id: string }) => w.id),
      // MCP header and environment values are left out of every export (only the host may ask for
      // them), so they no longer need a decision.
      ['portable-file:.opencode/plugins/leaky.ts'],
    )
    const excluded = await (await exportOf(s, 'exclude')).json()
    assert.equal(excluded.opencode.mcp.tracker.headers, { Authorization: '' })
    assert.equal(excluded.opencode.mcp.files.environment, { FILES_API_KEY: '' })
    assert.equal(
      excluded.files.map((f: { path: string }) => f.path),
      ['.opencode/plugins/local-notes.ts', '.opencode/tools/run.ts'],
    )
    assert.not.ok(JSON.stringify(excluded).includes('fixture-secret'))
    const included = await (await exportOf(s, 'include')).json()
    assert.is(included.opencode.mcp.tracker.headers.Authorization, '', 'include does not bring MCP secrets back')
    assert.ok(included.files.some((f: { path: string }) => f.path === '.opencode/plugins/leaky.ts'))
    assert.not.ok(
      included.files.some((f: { path: string }) => f.path.endsWith('.env')),
      '.env never travels',
    )
    assert.equal(
      included.skills.map((x: { name: string }) => x.name),
      ['hello-world'],
    )
    assert.equal(included.commands, [
      {
        name: 'review',
        template: 'Review the staged diff and list problems by severity.',
        description: 'Review the current change',
        agent: 'reviewer',
        subtask: true,
      },
    ])
    assert.is((await exportOf(s, 'maybe')).status, 400)
  } finally {
    await s.dispose()
  }
})

test('an export imported into an empty workspace and exported again equals the first', async () => {
  const source = await startTestServer()
  const target = await startTestServer({ fixture: false })
  try {
    const first = await (await exportOf(source, 'include')).json()
    const payload = {
      opencode: first.opencode,
      workspace: first.workspace,
      skills: first.skills,
      commands: first.commands,
      files: first.files,
    }
    const p = await preview(target, payload)
    assert.equal(p.summary, { total: 5, create: 5, update: 0, replace: 0, delete: 0, unchanged: 0 })
    assert.not.ok(existsSync(join(target.root, '.opencode')), 'the preview writes nothing')
    const required = await importWith(target, payload)
    assert.is(required.status, 409)
    const requiredBody = await required.json()
    assert.equal(
      [requiredBody.code, requiredBody.ok, requiredBody.preview.fingerprint],
      ['workspace_import_preview_required', false, p.fingerprint],
    )
    assert.not.ok(existsSync(join(target.root, '.opencode')))
    const done = await importWith(target, { ...payload, previewFingerprint: p.fingerprint })
    assert.is(done.status, 200)
    const second = await (await exportOf(target, 'include')).json()
    assert.equal(strip(second), strip(first))
    const again = await importWith(target, { ...payload, previewFingerprint: 'anything-for-a-no-op' })
    assert.is(again.status, 409, 'a wrong fingerprint is stale even for a no-op')
    const noop = await importWith(target, payload)
    assert.equal([noop.status, (await noop.json()).preview.summary.unchanged], [200, 5])
    const audit = await (await target.req(`/workspace/${target.wsId}/audit`, { token: CLIENT_TOKEN })).json()
    assert.equal(
      audit.items.filter((e: { action: string }) => e.action === 'config.import').length,
      1,
      'a no-op import is not audited',
    )
    const events = await (await target.req(`/workspace/${target.wsId}/events`, { token: CLIENT_TOKEN })).json()
    assert.ok(events.items.some((e: { type: string; reason?: string }) => e.type === 'reload' && e.reason === 'config'))
  } finally {
    await source.dispose()
    await target.dispose()
  }
})

test('merge and replace per section: replace removes extras, merge keeps them; bad paths and stale fingerprints are refused', async () => {
  const s = await startTestServer()
  try {
    const mergeBody = { opencode: { model: 'm/merged' } }
    const merge = await importWith(s, { ...mergeBody, previewFingerprint: (await preview(s, mergeBody)).fingerprint })
    assert.is(merge.status, 200)
    const mergedText = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    assert.match(mergedText, /\/\/ Project config for the workspace-basic fixture/, 'a merge keeps comments')
    assert.match(mergedText, /"model": "m\/merged"/)
    assert.match(mergedText, /"mcp"/, 'a merge keeps keys it was not given')
    const skill = {
      name: 'fresh-skill',
      content: '---\nname: fresh-skill\ndescription: A fresh skill\n---\n\nDo it.\n',
    }
    const merged = await preview(s, { skills: [skill] })
    assert.equal(
      merged.changes.map((c: { kind: string; action: string; label: string }) => `${c.kind}:${c.action}:${c.label}`),
      ['skill:create:fresh-skill'],
    )
    const replaced = await preview(s, {
      mode: { skills: 'replace', commands: 'replace', opencode: 'replace' },
      skills: [skill],
      commands: [],
      opencode: { model: 'x/y' },
    })
    assert.equal(
      replaced.changes.map((c: { kind: string; action: string; label: string }) => `${c.kind}:${c.action}:${c.label}`),
      [
        'opencode:replace:opencode.jsonc',
        'skill:create:fresh-skill',
        'skill:delete:hello-world',
        'command:delete:review',
      ],
    )
    const res = await importWith(s, {
      mode: { skills: 'replace', commands: 'replace', opencode: 'replace' },
      skills: [skill],
      commands: [],
      opencode: { model: 'x/y' },
      previewFingerprint: replaced.fingerprint,
    })
    assert.is(res.status, 200)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/hello-world')))
    assert.not.ok(existsSync(join(s.root, '.opencode/commands/review.md')))
    const config = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    assert.match(config, /"model": "x\/y"/)
    assert.not.ok(config.includes('"mcp"'))
    const env = await s.req(`/workspace/${s.wsId}/import/preview`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { files: [{ path: '.opencode/.env', content: 'X=1' }] },
    })
    assert.equal([env.status, (await env.json()).code], [400, 'invalid_portable_file_path'])
    const outside = await s.req(`/workspace/${s.wsId}/import/preview`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { files: [{ path: '.opencode/tools/../../../etc/x', content: 'X' }] },
    })
    assert.is(outside.status, 400)
    const badFp = await importWith(s, {
      skills: [{ ...skill, content: skill.content + 'more\n' }],
      previewFingerprint: 42,
    })
    assert.equal([badFp.status, (await badFp.json()).code], [400, 'invalid_workspace_import_preview_fingerprint'])
    const stale = await importWith(s, {
      skills: [{ ...skill, content: skill.content + 'more\n' }],
      previewFingerprint: replaced.fingerprint,
    })
    const staleBody = await stale.json()
    assert.equal(
      [stale.status, staleBody.code, staleBody.preview.summary.update],
      [409, 'workspace_import_preview_stale', 1],
    )
  } finally {
    await s.dispose()
  }
})

test('an import never replaces a directory or reads through a symlink that leaves the workspace', async () => {
  const s = await startTestServer()
  const outside = mkdtempSync(join(tmpdir(), 'svc-import-outside-'))
  try {
    mkdirSync(join(s.root, '.opencode/tools/lib'), { recursive: true })
    writeFileSync(join(s.root, '.opencode/tools/lib/important.ts'), 'export const x = 1\n')
    const onDirectory = await s.req(`/workspace/${s.wsId}/import/preview`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { files: [{ path: '.opencode/tools/lib', content: 'hi\n' }] },
    })
    assert.equal([onDirectory.status, (await onDirectory.json()).code], [400, 'invalid_workspace_import_payload'])
    const applied = await importWith(s, {
      files: [{ path: '.opencode/tools/lib', content: 'hi\n' }],
      previewFingerprint: 'any',
    })
    assert.is(applied.status, 400)
    assert.ok(
      existsSync(join(s.root, '.opencode/tools/lib/important.ts')),
      'the directory and its files are still there',
    )

    writeFileSync(join(outside, 'secret.ts'), 'export const secret = "outside"\n')
    symlinkSync(join(outside, 'secret.ts'), join(s.root, '.opencode/tools/linked.ts'))
    const linked = await s.req(`/workspace/${s.wsId}/import/preview`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { files: [{ path: '.opencode/tools/linked.ts', content: 'x\n' }] },
    })
    assert.equal([linked.status, (await linked.json()).code], [400, 'invalid_path'])
    assert.is(readFileSync(join(outside, 'secret.ts'), 'utf8'), 'export const secret = "outside"\n')
  } finally {
    rmSync(outside, { recursive: true, force: true })
    await s.dispose()
  }
})

test('the plan is re-validated after approval, and a failing apply rolls back every change', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const payload = { files: [{ path: '.opencode/agents/helper.md', content: '# helper\n' }] }
    const p = await preview(s, payload)
    const pending = importWith(s, { ...payload, previewFingerprint: p.fingerprint })
    const approval = await eventually(
      async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0],
    )
    assert.is(approval.action, 'config.import')
    mkdirSync(join(s.root, '.opencode/agents'), { recursive: true })
    writeFileSync(join(s.root, '.opencode/agents/helper.md'), 'written meanwhile\n')
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    const res = await pending
    assert.equal([res.status, (await res.json()).code], [409, 'workspace_import_preview_stale'])
    assert.is(readFileSync(join(s.root, '.opencode/agents/helper.md'), 'utf8'), 'written meanwhile\n')

    // `.opencode/tools` is a file, so the second write cannot be placed: the first must be undone.
    writeFileSync(join(s.root, '.opencode/tools'), 'not a directory')
    const failing = {
      mode: { skills: 'replace' },
      skills: [{ name: 'new-one', content: '---\nname: new-one\ndescription: New\n---\nx\n' }],
      files: [{ path: '.opencode/tools/x.ts', content: 'x' }],
    }
    const fp = (await preview(s, failing)).fingerprint
    const pending2 = importWith(s, { ...failing, previewFingerprint: fp })
    const approval2 = await eventually(
      async () => (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0],
    )
    await s.req(`/approvals/${approval2.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    const failed = await pending2
    // A known failure answers its own stable code and a message naming no host path.
    const body = await failed.json()
    assert.equal([failed.status, body.code, body.message], [400, 'invalid_path', 'tools is not a directory'])
    assert.ok(existsSync(join(s.root, '.opencode/skills/hello-world/SKILL.md')), 'replace kept the existing skill')
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/new-one')), 'the incoming skill was not left behind')
  } finally {
    await s.dispose()
  }
})

test('a failed import answers a stable code for known failures and an opaque 500 for the rest', () => {
  const errno = (code: string) => Object.assign(new Error(`${code}: /home/someone/secret-path`), { code })
  const kind = importFailure(errno('ENOTDIR'))
  assert.equal([kind.status, kind.code], [409, 'import_target_conflict'])
  const full = importFailure(errno('ENOSPC'))
  assert.equal([full.status, full.code], [507, 'import_storage_full'])
  const logged: unknown[] = []
  const opaque = importFailure(new Error('EIO reading /home/someone/secret-path'), (e) => logged.push(e))
  assert.equal([opaque.status, opaque.code], [500, 'import_failed'])
  assert.not.ok(opaque.message.includes('secret-path'), 'the cause reaches the log, never the client')
  assert.is(logged.length, 1)
  for (const error of [kind, full]) assert.not.ok(error.message.includes('secret-path'))
})

test.run()
