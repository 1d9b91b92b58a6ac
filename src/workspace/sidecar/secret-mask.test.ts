/**
 * MCP secrets of `opencode.json` stay masked on every read path for principals below the owner
 * (issue 29 §5): file reads through a file session, the sidecar's config, file, diff and search
 * answers (a fake sidecar serving the workspace's real file), with the mask of `GET …/config`;
 * owners read them in clear, and a masked read written back keeps the real values.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startFakeSidecar, type FakeSidecar } from '../../../fixtures/fake-sidecar/fake-sidecar.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { MASK } from '../../opencode/mcp-entries.ts'
import { startSidecarApp, type SidecarApp } from '../testing/sidecar-test-kit.ts'

const test = suite('workspace/secret-mask', { timeoutMs: 60_000 })

const SECRETS = ['Bearer sk-live-123', 'env-secret-456', 'oauth-secret-789', 'url-password-0']
const OLD_SECRET = 'Bearer sk-old-999'
const CONFIG = `{
  // the project config
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "remote": {
      "type": "remote",
      "url": "https://bot:url-password-0@mcp.example/x",
      "headers": { "Authorization": "Bearer sk-live-123" },
      "oauth": { "clientId": "public-id", "clientSecret": "oauth-secret-789" }
    },
    "local": { "type": "local", "command": ["srv"], "environment": { "API_KEY": "env-secret-456" } }
  }
}
`
const PATCH = [
  'diff --git a/opencode.json b/opencode.json',
  '--- a/opencode.json',
  '+++ b/opencode.json',
  '@@ -6,1 +6,1 @@',
  `-      "headers": { "Authorization": "${OLD_SECRET}" },`,
  '+      "headers": { "Authorization": "Bearer sk-live-123" },',
  '',
].join('\n')

let fake: FakeSidecar
let kit: SidecarApp
let root: string

test.before(async () => {
  const json = (body: unknown) =>
    new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } })
  const file = () => readFileSync(join(root, 'opencode.json'), 'utf8')
  fake = await startFakeSidecar({
    answers: {
      '/config': () => json(JSON.parse(file().replace(/^\s*\/\/.*$/m, ''))),
      '/file/content': () => json({ type: 'text', content: file() }),
      '/vcs/diff': () => json([{ file: 'opencode.json', patch: PATCH, additions: 1, deletions: 1 }]),
      '/vcs/diff/raw': () => new Response(PATCH, { headers: { 'content-type': 'text/plain' } }),
      '/session/ses_own/diff': () => json([{ file: 'opencode.json', patch: PATCH, additions: 1, deletions: 1 }]),
      '/find': () =>
        json([{ path: { text: 'opencode.json' }, lines: { text: '"Authorization": "Bearer sk-live-123"' } }]),
    },
  })
  kit = await startSidecarApp({ workspaces: [{ sidecar: { baseUrl: fake.url } }] })
  root = kit.roots[0]!
  fake.options = { ...fake.options, sessions: { ses_own: root } }
  writeFileSync(join(root, 'opencode.json'), CONFIG)
})

test.after(async () => {
  await kit.dispose()
  await fake.close()
})

const PATHS = [
  '/config',
  '/file/content?path=opencode.json',
  '/vcs/diff',
  '/vcs/diff/raw',
  '/session/ses_own/diff',
  '/find?pattern=Authorization',
]

for (const as of ['viewer', 'collaborator'] as const) {
  test(`a ${as} reads no MCP secret through the sidecar's config, file, diff and search answers`, async () => {
    for (const path of PATHS) {
      const res = await kit.req(`/w/${kit.wsIds[0]}/sidecar${path}`, { as })
      assert.is(res.status, 200, path)
      const text = await res.text()
      for (const secret of [...SECRETS, OLD_SECRET]) assert.not.ok(text.includes(secret), `${path} shows ${secret}`)
      assert.ok(text.includes(MASK), `${path} shows the mask`)
    }
  })
}

test('the sidecar config answer is masked exactly as GET …/config masks the project config', async () => {
  const sidecar = await (await kit.req(`/w/${kit.wsIds[0]}/sidecar/config`, { as: 'viewer' })).json()
  const own = await (await kit.req(`/workspace/${kit.wsIds[0]}/config`, { as: 'viewer' })).json()
  assert.equal(sidecar.mcp, own.opencode.mcp)
  assert.is(sidecar.mcp.remote.url, `https://${MASK}:${MASK}@mcp.example/x`)
  assert.is(sidecar.mcp.remote.oauth.clientId, 'public-id')
})

test('an owner token reads the sidecar answers in clear', async () => {
  for (const path of ['/config', '/file/content?path=opencode.json', '/vcs/diff/raw']) {
    const text = await (await kit.req(`/w/${kit.wsIds[0]}/sidecar${path}`, { as: 'owner' })).text()
    assert.ok(text.includes('Bearer sk-live-123'), path)
  }
})

async function session(as: 'viewer' | 'collaborator' | 'owner'): Promise<string> {
  const res = await kit.req(`/workspace/${kit.wsIds[0]}/files/sessions`, { method: 'POST', json: {}, as })
  assert.is(res.status, 200)
  return (await res.json()).session.id
}

async function readConfig(id: string, as: 'viewer' | 'collaborator' | 'owner') {
  const res = await kit.req(`/files/sessions/${id}/read-batch`, {
    method: 'POST',
    json: { paths: ['opencode.json', 'copy.txt'] },
    as,
  })
  assert.is(res.status, 200)
  const items = (await res.json()).items as Array<{ ok: boolean; contentBase64: string; revision: string }>
  return items.map((item) => ({ ...item, text: Buffer.from(item.contentBase64, 'base64').toString('utf8') }))
}

test('read-batch masks opencode.json (and a copy of a secret elsewhere) below the owner, keeping comments and the revision', async () => {
  writeFileSync(join(root, 'copy.txt'), 'token: Bearer sk-live-123\n')
  for (const as of ['viewer', 'collaborator'] as const) {
    const [config, copy] = await readConfig(await session(as), as)
    for (const secret of SECRETS) assert.not.ok(config!.text.includes(secret), `${as}: ${secret}`)
    assert.ok(config!.text.startsWith('{\n  // the project config\n'), 'formatting and comments kept')
    assert.is(copy!.text, `token: ${MASK}\n`)
  }
  const [clear] = await readConfig(await session('owner'), 'owner')
  assert.is(clear!.text, CONFIG)
})

test('a collaborator writing a masked read back keeps the real secrets and its own change', async () => {
  const id = await session('collaborator')
  const [config] = await readConfig(id, 'collaborator')
  const edited = config!.text.replace('"public-id"', '"new-public-id"')
  const res = await kit.req(`/files/sessions/${id}/write-batch`, {
    method: 'POST',
    json: {
      writes: [
        {
          path: 'opencode.json',
          contentBase64: Buffer.from(edited).toString('base64'),
          ifMatchRevision: config!.revision,
        },
      ],
    },
    as: 'collaborator',
  })
  assert.is(res.status, 200, await res.clone().text())
  const onDisk = readFileSync(join(root, 'opencode.json'), 'utf8')
  assert.is(onDisk, CONFIG.replace('"public-id"', '"new-public-id"'))
  writeFileSync(join(root, 'opencode.json'), CONFIG)
})

test.run()
