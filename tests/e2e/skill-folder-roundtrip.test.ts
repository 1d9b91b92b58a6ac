/**
 * A skill folder end to end across both surfaces: exported from one workspace, stored by the
 * control plane (as JSON and as a zip), and its resolved files written into a second workspace
 * make a folder identical to the first, byte for byte and mode for mode.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { zipSync } from 'fflate'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { startTestControlPlane } from '../../src/control-plane/testing/test-control-plane.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../../src/workspace/testing/test-kit.ts'
import { assert, suite } from '../harness.ts'

const test = suite('e2e/skill folder round trip', { timeoutMs: 90_000 })

const SKILL_MD =
  '---\nname: release-notes\ndescription: |\n  Drafts release notes\n  from merged changes.\n---\n\nRun scripts/collect.sh first.\n'

/** path → [mode, base64 bytes] of every file under `dir`. */
function folderState(dir: string): Record<string, [number, string]> {
  const out: Record<string, [number, string]> = {}
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const path = join(at, name)
      const st = statSync(path)
      if (st.isDirectory()) walk(path)
      else out[relative(dir, path)] = [st.mode & 0o777, readFileSync(path).toString('base64')]
    }
  }
  if (existsSync(dir)) walk(dir)
  return out
}

async function writeResolved(
  ws: TestServer,
  files: Array<{ path: string; content: string; encoding: string; executable: boolean }>,
) {
  const prefix = '.opencode/skills/release-notes/'
  const skillMd = files.find((f) => f.path === `${prefix}SKILL.md`)!
  const res = await ws.req(`/workspace/${ws.wsId}/skills`, {
    method: 'POST',
    token: CLIENT_TOKEN,
    json: {
      name: 'release-notes',
      content: skillMd.content,
      files: files
        .filter((f) => f !== skillMd)
        .map((f) => ({
          path: f.path.slice(prefix.length),
          ...(f.encoding === 'base64' ? { contentBase64: f.content } : { content: f.content }),
          executable: f.executable,
        })),
    },
  })
  assert.is(res.status, 200, await res.clone().text())
}

test('a skill folder goes from a workspace through the control plane into another workspace unchanged', async () => {
  const source = await startTestServer({ fixture: false })
  const target = await startTestServer({ fixture: false })
  const viaZip = await startTestServer({ fixture: false })
  const cp = await startTestControlPlane()
  try {
    const created = await source.req(`/workspace/${source.wsId}/skills`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: {
        name: 'release-notes',
        content: SKILL_MD,
        files: [
          { path: 'scripts/collect.sh', content: '#!/bin/sh\ngit log --merges\n', executable: true },
          { path: 'references/style.md', content: '# Style\n\nShort lines.\n' },
          { path: 'assets/template.bin', contentBase64: randomBytes(4096).toString('base64') },
        ],
      },
    })
    assert.is(created.status, 200, await created.clone().text())
    const sourceDir = join(source.root, '.opencode/skills/release-notes')
    const exported = await (
      await source.req(`/workspace/${source.wsId}/export?sensitive=exclude`, { token: CLIENT_TOKEN })
    ).json()
    const skill = exported.skills.find((s: { name: string }) => s.name === 'release-notes')

    const org = await buildFixtureOrg(cp.client, 'rt')
    // JSON: the export's file entries are accepted as they are (content or contentBase64, sha256 checked).
    const object = await cp.client.post('/v1/config-objects', {
      token: org.member.token,
      json: {
        type: 'skill',
        sourceMode: 'import',
        title: 'Release notes',
        input: { rawSourceText: skill.content, files: skill.files },
      },
    })
    assert.is(object.status, 201, JSON.stringify(object.body))
    const resolved = await cp.client.get(`/v1/config-objects/${object.body.item.id}/resolved`, {
      token: org.member.token,
    })
    await writeResolved(target, resolved.body.item.files)
    assert.equal(folderState(join(target.root, '.opencode/skills/release-notes')), folderState(sourceDir))

    // Zip: the folder as `zip -r` packs it, modes included, is the same skill (no new version) and
    // resolves to the same files, which make the same folder once more.
    const entries: Record<string, unknown> = {}
    for (const [path, [mode, b64]] of Object.entries(folderState(sourceDir)))
      entries[`release-notes/${path}`] = [Buffer.from(b64, 'base64'), { os: 3, attrs: ((0o100000 | mode) << 16) >>> 0 }]
    const uploaded = await cp.client.post('/v1/config-objects/import', {
      token: org.member.token,
      body: zipSync(entries as never),
      headers: { 'content-type': 'application/zip' },
    })
    assert.is(uploaded.status, 200, JSON.stringify(uploaded.body))
    assert.equal(
      uploaded.body.items.map((i: { action: string; configObjectId: string }) => [i.action, i.configObjectId]),
      [['unchanged', object.body.item.id]],
    )
    const again = await cp.client.get(`/v1/config-objects/${object.body.item.id}/resolved`, { token: org.member.token })
    await writeResolved(viaZip, again.body.item.files)
    assert.equal(folderState(join(viaZip.root, '.opencode/skills/release-notes')), folderState(sourceDir))
  } finally {
    await source.dispose()
    await target.dispose()
    await viaZip.dispose()
    await cp.close()
  }
})

test.run()
