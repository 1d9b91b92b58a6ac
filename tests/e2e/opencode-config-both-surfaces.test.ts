/**
 * Real-shaped OpenCode files read by both surfaces with the same result: the MCP entries, commands
 * and agents of `fixtures/opencode/opencode.jsonc` and `opencode.json` as the workspace server
 * lists them from the file and as the control plane stores and resolves them; the same refusal of
 * a server neither could run; and a SKILL.md with a YAML block-scalar description accepted by both.
 */
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { buildFixtureOrg, type FixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../../src/control-plane/testing/test-control-plane.ts'
import { maskMcpEntry, mcpEntries } from '../../src/opencode/mcp-entries.ts'
import { checkOpencodeConfig, parseJsonc } from '../../src/opencode/opencode-config.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../../src/workspace/testing/test-kit.ts'
import { assert, suite } from '../harness.ts'

const test = suite('e2e/opencode config on both surfaces', { timeoutMs: 90_000 })

const FIXTURES = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../fixtures/opencode')

async function both(fn: (ws: TestServer, cp: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const ws = await startTestServer({ fixture: false })
  const cp = await startTestControlPlane()
  try {
    await fn(ws, cp, await buildFixtureOrg(cp.client, 'oc'))
  } finally {
    await cp.close()
    await ws.dispose()
  }
}

async function wsGet(ws: TestServer, path: string) {
  const res = await ws.req(`/workspace/${ws.wsId}${path}`, { token: CLIENT_TOKEN })
  assert.is(res.status, 200, `GET ${path}`)
  return res.json()
}

/** Creates a config object and returns its resolved form. */
async function resolvedObject(cp: TestControlPlane, token: string, type: string, title: string, input: unknown) {
  const created = await cp.client.post('/v1/config-objects', {
    token,
    json: { type, sourceMode: 'cloud', title, input },
  })
  assert.is(created.status, 201, JSON.stringify(created.body))
  const resolved = await cp.client.get(`/v1/config-objects/${created.body.item.id}/resolved`, { token })
  assert.is(resolved.status, 200)
  return resolved.body.item as { files: Array<{ path: string; content: string }>; config: Record<string, unknown> }
}

test('MCP servers, commands and agents of real-shaped config files read alike on both surfaces', async () => {
  await both(async (ws, cp, org) => {
    const token = org.member.token
    for (const file of ['opencode.jsonc', 'opencode.json']) {
      rmSync(join(ws.root, 'opencode.jsonc'), { force: true })
      rmSync(join(ws.root, 'opencode.json'), { force: true })
      copyFileSync(join(FIXTURES, file), join(ws.root, file))
      ws.app.services.workspaces.get(ws.wsId).cache.invalidate()
      const { value } = await parseJsonc(readFileSync(join(FIXTURES, file), 'utf8'))
      const config = value as Record<string, unknown>
      const listed = (await wsGet(ws, '/mcp')).items as Array<{ name: string; config: Record<string, unknown> }>
      assert.equal(
        listed.map((item) => item.name),
        Object.keys(mcpEntries(config)).sort(),
      )
      const fragments: Record<string, unknown> = {}
      for (const [name, entry] of Object.entries(mcpEntries(config))) {
        // `{enabled}` alone only switches a server another config layer defines: no object of its own.
        if (!('type' in entry)) continue
        // Given as an author would paste it from the file: JSONC, comments included.
        const source = `// ${name}, from ${file}\n${JSON.stringify({ name, ...entry }, null, 2)}\n`
        const resolved = await resolvedObject(cp, token, 'mcp', name, { rawSourceText: source })
        const mcp = resolved.config.mcp as Record<string, Record<string, unknown>>
        assert.equal(mcp[name], entry, `${file}: ${name} resolves to the entry as written`)
        assert.equal(
          maskMcpEntry(mcp[name]!),
          listed.find((item) => item.name === name)!.config,
          `${name} masked alike`,
        )
        fragments[name] = mcp[name]
      }
      assert.equal(checkOpencodeConfig({ mcp: fragments }), [], 'the merged fragments load in OpenCode')
      for (const [name, entry] of Object.entries((config.command ?? {}) as Record<string, Record<string, unknown>>)) {
        const resolved = await resolvedObject(cp, token, 'command', name, { normalizedPayload: { name, ...entry } })
        const [command] = resolved.files
        const target = join(ws.root, command!.path)
        mkdirSync(dirname(target), { recursive: true })
        writeFileSync(target, command!.content)
        ws.app.services.workspaces.get(ws.wsId).cache.invalidate()
        const item = ((await wsGet(ws, '/commands')).items as Array<Record<string, unknown>>).find(
          (c) => c.name === name,
        )
        assert.ok(item, `${name} is listed by the workspace`)
        for (const key of ['template', 'description', 'agent', 'subtask'])
          assert.equal(item![key], entry[key], `${name}.${key}`)
      }
      for (const [name, entry] of Object.entries((config.agent ?? {}) as Record<string, Record<string, unknown>>)) {
        const resolved = await resolvedObject(cp, token, 'agent', name, { normalizedPayload: { name, ...entry } })
        assert.is(resolved.files[0]!.path, `.opencode/agents/${name}.md`)
      }
    }
  })
})

test('a server neither surface could run is refused by both for the same reason', async () => {
  await both(async (ws, cp, org) => {
    for (const [config, field] of [
      [{ type: 'local', command: [] }, 'command'],
      [{ type: 'remote', url: 'ftp://files.example.com' }, 'url'],
      [{ type: 'remote', url: 'https://a.example', headers: { 'X-Key': 1 } }, 'headers.X-Key'],
    ] as const) {
      const refused = await ws.req(`/workspace/${ws.wsId}/mcp`, {
        method: 'POST',
        token: CLIENT_TOKEN,
        json: { name: 'srv', config },
      })
      assert.is(refused.status, 400)
      const wsBody = await refused.json()
      assert.is(wsBody.code, 'invalid_mcp_config')
      const cpRes = await cp.client.post('/v1/config-objects', {
        token: org.member.token,
        json: { type: 'mcp', sourceMode: 'cloud', title: 'srv', input: { normalizedPayload: { name: 'srv', config } } },
      })
      assert.is(cpRes.status, 422)
      assert.is(cpRes.body.details.reason, 'invalid_mcp_definition')
      const issue = cpRes.body.details.issues[0]
      assert.is(issue.path, `input.normalizedPayload.config.${field}`)
      assert.is(wsBody.message, `MCP ${field}: ${issue.message}`, 'the same rule, in the same words')
    }
  })
})

test('a SKILL.md whose description is a YAML block scalar is accepted by both surfaces alike', async () => {
  await both(async (ws, cp, org) => {
    const skillMd =
      '---\nname: release-notes\ndescription: |\n  Drafts release notes\n  from merged changes.\nlicense: >\n  MIT,\n  see LICENSE\n---\n\nRun the script.\n'
    const created = await ws.req(`/workspace/${ws.wsId}/skills`, {
      method: 'POST',
      token: CLIENT_TOKEN,
      json: { name: 'release-notes', content: skillMd },
    })
    assert.is(created.status, 200, await created.clone().text())
    const wsSkill = ((await wsGet(ws, '/skills')).items as Array<{ name: string; description: string }>).find(
      (s) => s.name === 'release-notes',
    )
    const cpRes = await cp.client.post('/v1/config-objects', {
      token: org.member.token,
      json: { type: 'skill', sourceMode: 'cloud', title: 'Release notes', input: { rawSourceText: skillMd } },
    })
    assert.is(cpRes.status, 201, JSON.stringify(cpRes.body))
    const version = await cp.client.get(`/v1/config-objects/${cpRes.body.item.id}/versions/latest`, {
      token: org.member.token,
    })
    const payload = version.body.item.normalizedPayload
    assert.is(payload.description, 'Drafts release notes\nfrom merged changes.')
    assert.equal(payload.metadata, { license: 'MIT, see LICENSE\n' })
    assert.is(wsSkill?.description, payload.description)
    const resolved = await cp.client.get(`/v1/config-objects/${cpRes.body.item.id}/resolved`, {
      token: org.member.token,
    })
    assert.is(resolved.body.item.files[0].content, skillMd, 'the runtime installs the file as written')
  })
})

test.run()
