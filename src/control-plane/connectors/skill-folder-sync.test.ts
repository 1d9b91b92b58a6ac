/**
 * The git connector brings whole skill folders: a mapping that selects SKILL.md files imports
 * each folder's scripts, references and assets byte for byte with their executable bits, and a
 * change to any file of the folder is a new version.
 */
import { chmodSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { type AsyncTestPlane, startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/skill-folder-sync', { timeoutMs: 60_000 })

const done = (status: string) => !['queued', 'running'].includes(status)
const BINARY = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13])

async function target(t: AsyncTestPlane, org: FixtureOrg, remoteId: string): Promise<string> {
  const token = org.admin.token
  const account = await t.client.post('/v1/connector-accounts', {
    token,
    json: { connectorType: 'git', remoteId: 'local-skills', displayName: 'Local git' },
  })
  const instance = await t.client.post('/v1/connector-instances', {
    token,
    json: { connectorAccountId: account.body.item.id, connectorType: 'git', name: 'Skills', config: {} },
  })
  const created = await t.client.post(`/v1/connector-instances/${instance.body.item.id}/targets`, {
    token,
    json: { connectorType: 'git', remoteId, targetKind: 'repository_branch', config: { branch: 'main' } },
  })
  assert.is(created.status, 201, JSON.stringify(created.body))
  return created.body.item.id
}

async function sync(t: AsyncTestPlane, token: string, targetId: string) {
  const accepted = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token })
  assert.is(accepted.status, 202)
  const finished = await waitFor(
    () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token }),
    (r) => done(r.body.item.status),
    20_000,
  )
  return finished.body.item
}

test('a skill folder syncs with its files, and a change to its script alone is a new version', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, {
      'skills/pdf/SKILL.md': skillText('pdf'),
      'skills/pdf/scripts/run.sh': '#!/bin/sh\necho one\n',
      'skills/pdf/references/guide.md': '# Guide\n',
      'skills/pdf/.DS_Store': 'litter',
      'skills/pdf/node_modules/dep/index.js': 'module.exports = 1\n',
      'skills/other/SKILL.md': skillText('other'),
    })
    const work = join(dir, 'work')
    chmodSync(join(work, 'skills/pdf/scripts/run.sh'), 0o755)
    writeFileSync(join(work, 'skills/pdf/assets.bin'), BINARY)
    repo.commit({}, 'executable script and a binary asset')
    const t = await startAsyncTestPlane()
    try {
      const org = await buildFixtureOrg(t.client, 'sfs')
      const token = org.admin.token
      const targetId = await target(t, org, repo.url)
      const mapping = await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
        token,
        json: { mappingKind: 'path', selector: 'skills/*/SKILL.md', objectType: 'skill' },
      })
      assert.is(mapping.status, 201)
      const discovery = await t.client.post(`/v1/connector-targets/${targetId}/discovery`, { token })
      const found = await waitFor(
        () => t.client.get(`/v1/connector-discoveries/${discovery.body.item.id}`, { token }),
        (r) => done(r.body.item.status),
      )
      assert.equal(
        found.body.item.items.map((i: { name: string; fileCount: number }) => [i.name, i.fileCount]),
        [
          ['other', 1],
          ['pdf', 4],
        ],
      )

      const first = await sync(t, token, targetId)
      assert.is(first.status, 'completed', JSON.stringify(first.failures))
      const objects = await t.client.get('/v1/config-objects?type=skill', { token })
      const pdf = objects.body.items.find((o: { name: string }) => o.name === 'pdf')
      const resolved = await t.client.get(`/v1/config-objects/${pdf.id}/resolved`, { token })
      const files = resolved.body.item.files as Array<{
        path: string
        content: string
        encoding: string
        executable: boolean
      }>
      assert.equal(
        files.map((f) => [f.path, f.encoding, f.executable]),
        [
          ['.opencode/skills/pdf/SKILL.md', 'utf8', false],
          ['.opencode/skills/pdf/assets.bin', 'base64', false],
          ['.opencode/skills/pdf/references/guide.md', 'utf8', false],
          ['.opencode/skills/pdf/scripts/run.sh', 'utf8', true],
        ],
      )
      assert.ok(Buffer.from(files[1]!.content, 'base64').equals(BINARY), 'binary bytes are exact')

      const unchanged = await sync(t, token, targetId)
      assert.equal([unchanged.counts.unchanged, unchanged.counts.updated], [2, 0])

      repo.commit({ 'skills/pdf/scripts/run.sh': '#!/bin/sh\necho two\n' }, 'new script')
      const second = await sync(t, token, targetId)
      assert.equal([second.counts.updated, second.counts.unchanged], [1, 1])
      const latest = await t.client.get(`/v1/config-objects/${pdf.id}/versions/latest`, { token })
      assert.is(latest.body.item.number, 2)
      const script = latest.body.item.files.find((f: { path: string }) => f.path === 'scripts/run.sh')
      assert.is(script.content, '#!/bin/sh\necho two\n')
      assert.is(script.executable, true, 'the executable bit survives the change')
      assert.is(latest.body.item.rawSourceText, skillText('pdf'), 'SKILL.md itself did not change')
    } finally {
      await t.close()
    }
  })
})

test.run()
