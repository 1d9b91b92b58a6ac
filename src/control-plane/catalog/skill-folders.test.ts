/**
 * Skills as folders on the control plane: files in every version, byte-exact resolved forms from
 * JSON and from a zip, versions deduplicated by content, delivery through /v1/me/skills, and zip
 * uploads that are refused whole when anything in them is hostile.
 */
import { randomBytes } from 'node:crypto'
import { strToU8, zipSync } from 'fflate'
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/skill-folders', { timeoutMs: 90_000 })

const SKILL_MD = '---\nname: pdf-tools\ndescription: >\n  Extract text from PDF files.\n---\n\nRun scripts/run.sh.\n'
const ASSET = randomBytes(64 * 1024)

interface Folder {
  skillMd: string
  files: Array<{ path: string; bytes: Uint8Array; executable: boolean }>
}

function folder(script = '#!/bin/sh\npdftotext "$1" -\n'): Folder {
  return {
    skillMd: SKILL_MD,
    files: [
      { path: 'assets/logo.bin', bytes: new Uint8Array(ASSET), executable: false },
      { path: 'references/guide.md', bytes: strToU8('# Guide\n\nRead me.\n'), executable: false },
      { path: 'scripts/run.sh', bytes: strToU8(script), executable: true },
    ],
  }
}

/** A zip of skill folders; each entry carries its Unix mode as `zip -r` writes it. */
function zipOf(folders: Record<string, Folder>): Uint8Array {
  const entries: Record<string, unknown> = {}
  for (const [name, f] of Object.entries(folders)) {
    entries[`${name}/SKILL.md`] = [strToU8(f.skillMd), { os: 3, attrs: (0o100644 << 16) >>> 0 }]
    for (const file of f.files)
      entries[`${name}/${file.path}`] = [
        file.bytes,
        { os: 3, attrs: ((file.executable ? 0o100755 : 0o100644) << 16) >>> 0 },
      ]
  }
  return zipSync(entries as never)
}

const jsonFiles = (f: Folder) =>
  f.files.map((file) => ({
    path: file.path,
    contentBase64: Buffer.from(file.bytes).toString('base64'),
    ...(file.executable ? { executable: true } : {}),
  }))

async function world(fn: (t: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t, await buildFixtureOrg(t.client, 'sf'))
  } finally {
    await t.close()
  }
}

function upload(t: TestControlPlane, token: string, zip: Uint8Array, preview = false) {
  return t.client.post(`/v1/config-objects/import${preview ? '?preview=true' : ''}`, {
    token,
    body: zip,
    headers: { 'content-type': 'application/zip' },
  })
}

async function skillNames(t: TestControlPlane, token: string): Promise<string[]> {
  const res = await t.client.get('/v1/config-objects?type=skill&limit=100', { token })
  return res.body.items.map((i: { name: string }) => i.name)
}

test('the same skill created through JSON and through a zip resolves to equal, byte-exact files', async () => {
  await world(async (t, org) => {
    const f = folder()
    const json = await t.client.post('/v1/config-objects', {
      token: org.owner.token,
      json: {
        type: 'skill',
        sourceMode: 'import',
        title: 'PDF',
        input: { rawSourceText: f.skillMd, files: jsonFiles(f) },
      },
    })
    assert.is(json.status, 201, JSON.stringify(json.body))
    // The member cannot see the owner's skill, so the zip makes a second object of the same name.
    const zipped = await upload(t, org.member.token, zipOf({ 'pdf-tools': f }))
    assert.is(zipped.status, 200, JSON.stringify(zipped.body))
    assert.equal(
      zipped.body.items.map((i: { action: string; fileCount: number }) => [i.action, i.fileCount]),
      [['create', 3]],
    )
    const a = await t.client.get(`/v1/config-objects/${json.body.item.id}/resolved`, { token: org.owner.token })
    const b = await t.client.get(`/v1/config-objects/${zipped.body.items[0].configObjectId}/resolved`, {
      token: org.member.token,
    })
    assert.equal(a.body.item.files, b.body.item.files)
    const files = a.body.item.files as Array<{ path: string; content: string; encoding: string; executable: boolean }>
    assert.equal(
      files.map((x) => [x.path, x.encoding, x.executable]),
      [
        ['.opencode/skills/pdf-tools/SKILL.md', 'utf8', false],
        ['.opencode/skills/pdf-tools/assets/logo.bin', 'base64', false],
        ['.opencode/skills/pdf-tools/references/guide.md', 'utf8', false],
        ['.opencode/skills/pdf-tools/scripts/run.sh', 'utf8', true],
      ],
    )
    assert.is(files[0]!.content, SKILL_MD)
    assert.ok(Buffer.from(files[1]!.content, 'base64').equals(ASSET), 'the binary asset is byte-exact')
    const version = await t.client.get(`/v1/config-objects/${json.body.item.id}/versions/latest`, {
      token: org.owner.token,
    })
    assert.equal(
      version.body.item.files.map((x: { path: string; executable?: true }) => [x.path, x.executable ?? false]),
      [
        ['assets/logo.bin', false],
        ['references/guide.md', false],
        ['scripts/run.sh', true],
      ],
    )
  })
})

test('changing only the script adds version 2, and uploading the same zip again adds nothing', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    const first = await upload(t, token, zipOf({ 'pdf-tools': folder() }))
    const id = first.body.items[0].configObjectId
    const same = await upload(t, token, zipOf({ 'pdf-tools': folder() }))
    assert.equal(
      same.body.items.map((i: { action: string; versionNumber: number; configObjectId: string }) => [
        i.action,
        i.versionNumber,
        i.configObjectId,
      ]),
      [['unchanged', 1, id]],
    )
    // The same folder through JSON is unchanged too: versions are deduplicated by content.
    const again = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token,
      json: { input: { rawSourceText: SKILL_MD, files: jsonFiles(folder()) } },
    })
    assert.is(again.body.item.number, 1)
    const changed = zipOf({ 'pdf-tools': folder('#!/bin/sh\npdftotext -layout "$1" -\n') })
    const preview = await upload(t, token, changed, true)
    assert.equal(
      preview.body.items.map((i: { action: string }) => i.action),
      ['update'],
    )
    assert.is(
      (await t.client.get(`/v1/config-objects/${id}`, { token })).body.item.versionCount,
      1,
      'a preview stores nothing',
    )
    const updated = await upload(t, token, changed)
    assert.is(updated.body.items[0].action, 'update')
    assert.is(updated.body.items[0].versionNumber, 2)
    const latest = await t.client.get(`/v1/config-objects/${id}/versions/latest`, { token })
    const script = latest.body.item.files.find((x: { path: string }) => x.path === 'scripts/run.sh')
    assert.is(script.content, '#!/bin/sh\npdftotext -layout "$1" -\n')
    assert.is(script.executable, true)
    const history = await t.client.get(`/v1/config-objects/${id}/versions`, { token })
    assert.is(history.body.items.length, 2)
  })
})

test('a version that omits files keeps the previous files byte-exact, and files: [] removes them', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    const f = folder()
    const created = await t.client.post('/v1/config-objects', {
      token,
      json: {
        type: 'skill',
        sourceMode: 'cloud',
        title: 'PDF',
        input: { rawSourceText: f.skillMd, files: jsonFiles(f) },
      },
    })
    assert.is(created.status, 201, JSON.stringify(created.body))
    const id = created.body.item.id
    const edited = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token,
      json: { input: { rawSourceText: `${SKILL_MD}\nMore text.\n` } },
    })
    assert.is(edited.status, 201, JSON.stringify(edited.body))
    assert.is(edited.body.item.number, 2)
    const before = (await t.client.get(`/v1/config-objects/${id}/versions`, { token })).body.items[1]
    assert.equal(edited.body.item.files, before.files, 'version 2 has version 1 files, sha256 and executable flags')
    const resolved = await t.client.get(`/v1/config-objects/${id}/resolved`, { token })
    const asset = resolved.body.item.files.find((x: { path: string }) => x.path.endsWith('assets/logo.bin'))
    assert.ok(Buffer.from(asset.content, 'base64').equals(ASSET), 'the binary asset is byte-exact')
    const script = resolved.body.item.files.find((x: { path: string }) => x.path.endsWith('scripts/run.sh'))
    assert.is(script.executable, true)
    const cleared = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token,
      json: { input: { rawSourceText: `${SKILL_MD}\nMore text.\n`, files: [] } },
    })
    assert.is(cleared.body.item.number, 3)
    assert.equal(cleared.body.item.files, [])
    const skill = await t.client.get(`/v1/skills/${id}`, { token })
    assert.equal(skill.body.item.files, [])
    // Omitting files again now keeps the empty set: nothing changed, so no version is added.
    const same = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token,
      json: { input: { rawSourceText: `${SKILL_MD}\nMore text.\n` } },
    })
    assert.is(same.body.item.number, 3)
  })
})

test('a member sees the files through /v1/me/skills only once a grant or a hub gives them the skill', async () => {
  await world(async (t, org) => {
    const owner = org.owner.token
    const created = await upload(t, owner, zipOf({ 'pdf-tools': folder() }))
    const id = created.body.items[0].configObjectId
    assert.equal((await t.client.get('/v1/me/skills', { token: org.member.token })).body.items, [])
    const hub = (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Docs' } })).body.item.id
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: id } })
    assert.equal((await t.client.get('/v1/me/skills', { token: org.member.token })).body.items, [])
    await t.client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { memberId: org.member.memberId } })
    const mine = await t.client.get('/v1/me/skills', { token: org.member.token })
    assert.is(mine.body.items.length, 1)
    assert.equal(
      mine.body.items[0].skill.files.map((x: { path: string; bytes: number; executable: boolean }) => [
        x.path,
        x.bytes,
        x.executable,
      ]),
      [
        ['assets/logo.bin', 64 * 1024, false],
        ['references/guide.md', 18, false],
        ['scripts/run.sh', 27, true],
      ],
    )
    const resolved = await t.client.get(`/v1/config-objects/${id}/resolved`, { token: org.member.token })
    assert.is(resolved.status, 200)
    assert.is(resolved.body.item.files.length, 4)
    const viaHub = await t.client.get(`/v1/skill-hubs/${hub}/resolved`, { token: owner })
    assert.equal(viaHub.body.items[0].files, resolved.body.item.files, 'the hub resolves every file of its skills')
  })
})

test('hostile zips are refused with a clear code, quickly, and nothing of them is imported', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    const good = zipOf({ 'good-skill': { ...folder(), skillMd: SKILL_MD.replace('pdf-tools', 'good-skill') } })
    const refuse = async (zip: Uint8Array, status: number, code: string) => {
      const started = performance.now()
      const res = await upload(t, token, zip)
      assert.is(res.status, status, JSON.stringify(res.body))
      assert.is(res.body.code, code)
      assert.ok(performance.now() - started < 15_000, `${code} answered in ${performance.now() - started} ms`)
      return res
    }
    const withGood = (extra: Record<string, unknown>) =>
      zipSync({
        'good-skill/SKILL.md': strToU8(SKILL_MD.replace('pdf-tools', 'good-skill')),
        ...extra,
      } as never)
    await refuse(
      withGood({
        'bad/SKILL.md': strToU8(SKILL_MD.replace('pdf-tools', 'bad')),
        'bad/link': [strToU8('/etc/passwd'), { os: 3, attrs: (0o120777 << 16) >>> 0 }],
      }),
      422,
      'zip_entry_symlink',
    )
    await refuse(withGood({ '../escape.sh': strToU8('x') }), 422, 'zip_entry_escapes')
    await refuse(
      withGood({ 'pdf-tools/SKILL.md': strToU8('---\nname: other\ndescription: d\n---\nx\n') }),
      422,
      'zip_skill_name_mismatch',
    )
    // A 1 KiB entry that inflates to 1 MiB, past a per-file limit of 512 KiB set for this test.
    t.app.deps.settings.skills = { maxFileBytes: 512 * 1024 }
    const bomb = withGood({ 'good-skill/bomb.bin': new Uint8Array(1024 * 1024) })
    assert.ok(bomb.byteLength < 4096, `the bomb is ${bomb.byteLength} bytes`)
    const tooBig = await refuse(bomb, 413, 'skill_file_too_large')
    assert.equal(tooBig.body.details, {
      limit: 'maxFileBytes',
      max: 512 * 1024,
      path: 'good-skill/bomb.bin',
      size: tooBig.body.details.size,
    })
    t.app.deps.settings.skills = undefined
    const many: Record<string, Uint8Array> = {}
    for (let i = 0; i < 100_000; i++) many[`good-skill/f${i}`] = new Uint8Array(0)
    await refuse(withGood(many), 422, 'zip_too_many_entries')
    const wrongType = await t.client.post('/v1/config-objects/import', {
      token,
      body: good,
      headers: { 'content-type': 'application/octet-stream' },
    })
    assert.is(wrongType.status, 415)
    assert.equal(await skillNames(t, token), [], 'nothing of a refused archive was imported')
    assert.is((await upload(t, token, good)).status, 200)
    assert.equal(await skillNames(t, token), ['good-skill'])
  })
})

test('skill files sent as JSON are checked: limits name the limit and path, other types take no files', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    t.app.deps.settings.skills = { maxFileBytes: 1000 }
    const big = await t.client.post('/v1/config-objects', {
      token,
      json: {
        type: 'skill',
        sourceMode: 'cloud',
        title: 'x',
        input: {
          rawSourceText: SKILL_MD,
          files: [{ path: 'assets/big.bin', contentBase64: Buffer.alloc(2000).toString('base64') }],
        },
      },
    })
    assert.is(big.status, 413)
    assert.is(big.body.code, 'skill_file_too_large')
    assert.equal(big.body.details, { limit: 'maxFileBytes', max: 1000, path: 'assets/big.bin', size: 2000 })
    const outside = await t.client.post('/v1/config-objects', {
      token,
      json: {
        type: 'skill',
        sourceMode: 'cloud',
        title: 'x',
        input: { rawSourceText: SKILL_MD, files: [{ path: '../../etc/x', content: 'x' }] },
      },
    })
    assert.is(outside.status, 422)
    assert.is(outside.body.details.reason, 'invalid_skill_file_path')
    const notSkill = await t.client.post('/v1/config-objects', {
      token,
      json: {
        type: 'context',
        sourceMode: 'cloud',
        title: 'ctx',
        input: { rawSourceText: 'x', files: [{ path: 'a.txt', content: 'x' }] },
      },
    })
    assert.is(notSkill.status, 422)
    assert.is(notSkill.body.details.reason, 'files_not_allowed')
    assert.equal(await skillNames(t, token), [])
  })
})

test.run()
