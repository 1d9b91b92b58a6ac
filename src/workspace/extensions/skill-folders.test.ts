/**
 * Skills as folders on the workspace server: files written with their modes, listed and read
 * back, carried byte for byte through export and import, updated through one approval listing
 * every file, removed with their folder, and hostile bundles refused with nothing written.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/skill folders', { timeoutMs: 60_000 })

const SKILL_MD = '---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\n\nRun scripts/run.sh.\n'
const ASSET = randomBytes(64 * 1024)
const FILES = [
  {
    path: 'scripts/run.sh',
    contentBase64: Buffer.from('#!/bin/sh\npdftotext "$1" -\n').toString('base64'),
    executable: true,
  },
  { path: 'references/guide.md', contentBase64: Buffer.from('# Guide\n').toString('base64') },
  { path: 'assets/logo.bin', contentBase64: ASSET.toString('base64') },
]

const post = (s: TestServer, body: unknown) =>
  s.req(`/workspace/${s.wsId}/skills`, { method: 'POST', token: CLIENT_TOKEN, json: body })

async function exportSkills(s: TestServer) {
  const res = await s.req(`/workspace/${s.wsId}/export?sensitive=exclude`, { token: CLIENT_TOKEN })
  assert.is(res.status, 200)
  return (await res.json()).skills as Array<{ name: string; files: Array<Record<string, unknown>> }>
}

/** Every entry under a folder, with file bytes and mode, for "nothing was written" checks. */
function snapshot(dir: string): string {
  if (!existsSync(dir)) return '(missing)'
  const out: string[] = []
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = join(dir, rel, name)
      const st = statSync(path)
      if (st.isDirectory()) walk(join(rel, name))
      else out.push(`${join(rel, name)} ${st.mode.toString(8)} ${readFileSync(path).toString('base64')}`)
    }
  }
  walk('')
  return out.join('\n')
}

test('a skill with an executable script, a reference and a 64 KiB binary survives export, import and export byte for byte', async () => {
  const a = await startTestServer()
  const b = await startTestServer({ fixture: false })
  try {
    const created = await post(a, { name: 'pdf-tools', content: SKILL_MD, files: FILES })
    assert.is(created.status, 200, await created.clone().text())
    const dir = join(a.root, '.opencode/skills/pdf-tools')
    assert.is(statSync(join(dir, 'scripts/run.sh')).mode & 0o777, 0o755)
    assert.is(statSync(join(dir, 'references/guide.md')).mode & 0o777, 0o644)
    assert.ok(readFileSync(join(dir, 'assets/logo.bin')).equals(ASSET))
    const one = await (await a.req(`/workspace/${a.wsId}/skills/pdf-tools`, { token: CLIENT_TOKEN })).json()
    assert.equal(
      one.files.map((f: { path: string; bytes: number; executable: boolean }) => [f.path, f.bytes, f.executable]),
      [
        ['assets/logo.bin', 64 * 1024, false],
        ['references/guide.md', 8, false],
        ['scripts/run.sh', 27, true],
      ],
    )
    const asset = await (
      await a.req(`/workspace/${a.wsId}/skills/pdf-tools/files/assets/logo.bin`, { token: CLIENT_TOKEN })
    ).json()
    assert.ok(Buffer.from(asset.content, 'base64').equals(ASSET))
    assert.is(asset.encoding, 'base64')
    assert.is(asset.contentBase64, asset.content)
    const script = await (
      await a.req(`/workspace/${a.wsId}/skills/pdf-tools/files/scripts/run.sh`, { token: CLIENT_TOKEN })
    ).json()
    assert.is(script.content, '#!/bin/sh\npdftotext "$1" -\n')
    assert.is(script.executable, true)
    const missing = await a.req(`/workspace/${a.wsId}/skills/pdf-tools/files/nope.txt`, { token: CLIENT_TOKEN })
    assert.is(missing.status, 404)

    const first = (await exportSkills(a)).filter((x) => x.name === 'pdf-tools')
    const payload = { skills: first }
    const preview = await (
      await b.req(`/workspace/${b.wsId}/import/preview`, { method: 'POST', token: CLIENT_TOKEN, json: payload })
    ).json()
    assert.equal(
      preview.changes.map((c: { kind: string; action: string; label: string }) => [c.kind, c.action, c.label]),
      [
        ['skill', 'create', 'pdf-tools'],
        ['skill-file', 'create', 'pdf-tools/assets/logo.bin'],
        ['skill-file', 'create', 'pdf-tools/references/guide.md'],
        ['skill-file', 'create', 'pdf-tools/scripts/run.sh'],
      ],
    )
    const imported = await b.req(`/workspace/${b.wsId}/import`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { ...payload, previewFingerprint: preview.fingerprint },
    })
    assert.is(imported.status, 200, await imported.clone().text())
    assert.equal(await exportSkills(b), first)
    assert.is(snapshot(join(b.root, '.opencode/skills/pdf-tools')), snapshot(dir), 'same bytes and modes on disk')
    // Importing the same export again changes nothing.
    const again = await (
      await b.req(`/workspace/${b.wsId}/import/preview`, { method: 'POST', token: CLIENT_TOKEN, json: payload })
    ).json()
    assert.is(again.summary.unchanged, again.summary.total)
  } finally {
    await a.dispose()
    await b.dispose()
  }
})

test('hostile bundles are refused and nothing is written', async () => {
  const s = await startTestServer({ extraConfig: { skills: { maxFiles: 3, maxFileBytes: 1024, maxBytes: 2048 } } })
  const outside = mkdtempSync(join(tmpdir(), 'svc-outside-'))
  try {
    const skills = join(s.root, '.opencode/skills')
    const before = snapshot(skills)
    const file = (path: string, bytes = 4) => ({ path, contentBase64: Buffer.alloc(bytes, 1).toString('base64') })
    for (const [files, status, code] of [
      [[file('../../escape.sh')], 422, 'invalid_skill_file_path'],
      [[file('/etc/cron.d/x')], 422, 'invalid_skill_file_path'],
      [[file('.git/hooks/pre-commit')], 422, 'invalid_skill_file_path'],
      [[file('node_modules/x/index.js')], 422, 'invalid_skill_file_path'],
      [[file('a'), file('b'), file('c')], 422, 'skill_too_many_files'],
      [[file('big.bin', 1025)], 413, 'skill_file_too_large'],
      [[file('a', 1000), file('b', 1000)], 413, 'skill_too_large'],
      [[file('a'), file('./a')], 422, 'skill_file_duplicate'],
    ] as const) {
      const res = await post(s, { name: 'evil', content: SKILL_MD.replace('pdf-tools', 'evil'), files })
      assert.is(res.status, status, JSON.stringify(files).slice(0, 80))
      const body = await res.json()
      assert.is(body.code, code)
      if (status === 413) assert.is(typeof body.details.limit, 'string')
    }
    assert.is(snapshot(skills), before, 'no refused bundle wrote anything')
    // A symlink planted in a skill folder is never listed, exported or written through.
    mkdirSync(join(skills, 'linked/scripts'), { recursive: true })
    await post(s, { name: 'linked', content: SKILL_MD.replace('pdf-tools', 'linked') })
    symlinkSync(outside, join(skills, 'linked/out'))
    const listed = await (await s.req(`/workspace/${s.wsId}/skills/linked`, { token: CLIENT_TOKEN })).json()
    assert.equal(listed.files, [])
    const replaced = await post(s, {
      name: 'linked',
      content: SKILL_MD.replace('pdf-tools', 'linked'),
      files: [{ path: 'out/run.sh', contentBase64: Buffer.from('x').toString('base64') }],
    })
    assert.is(replaced.status, 200)
    assert.equal(readdirSync(outside), [], 'nothing was written through the link')
    assert.ok(statSync(join(skills, 'linked/out')).isDirectory(), 'the folder was replaced, link and all')
  } finally {
    await s.dispose()
    rmSync(outside, { recursive: true, force: true })
  }
})

test('an update is one approval listing every file it changes, and DELETE removes the whole folder', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const decide = async (expectPaths: string[]) => {
      const pending = await eventually(
        async () => {
          const items = (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items
          return items.length === 1 ? items[0] : undefined
        },
        5000,
        'a pending approval',
      )
      assert.equal(
        pending.paths,
        expectPaths.map((p) => join(s.root, '.opencode/skills/pdf-tools', p)),
      )
      await s.req(`/approvals/${pending.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    }
    let write = post(s, { name: 'pdf-tools', content: SKILL_MD, files: FILES })
    await decide(['SKILL.md', 'assets/logo.bin', 'references/guide.md', 'scripts/run.sh'])
    assert.is((await write).status, 200)
    write = post(s, {
      name: 'pdf-tools',
      content: SKILL_MD,
      files: [
        { ...FILES[0]!, executable: false },
        { path: 'references/more.md', contentBase64: Buffer.from('more').toString('base64') },
      ],
    })
    await decide(['assets/logo.bin', 'references/guide.md', 'references/more.md', 'scripts/run.sh'])
    assert.is((await write).status, 200)
    const dir = join(s.root, '.opencode/skills/pdf-tools')
    assert.is(statSync(join(dir, 'scripts/run.sh')).mode & 0o777, 0o644, 'the executable bit was cleared')
    assert.not.ok(existsSync(join(dir, 'assets')), 'files left out of the update are gone')
    // The same folder again needs no approval: nothing would change.
    assert.is(
      (
        await post(s, {
          name: 'pdf-tools',
          content: SKILL_MD,
          files: [
            { ...FILES[0]!, executable: false },
            { path: 'references/more.md', contentBase64: Buffer.from('more').toString('base64') },
          ],
        })
      ).status,
      200,
    )
    const remove = s.req(`/workspace/${s.wsId}/skills/pdf-tools`, { method: 'DELETE', token: CLIENT_TOKEN })
    await decide(['SKILL.md', 'references/more.md', 'scripts/run.sh'])
    assert.is((await remove).status, 200)
    assert.not.ok(existsSync(dir))
  } finally {
    await s.dispose()
  }
})

test.run()
