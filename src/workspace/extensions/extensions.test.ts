import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/extensions')

const get = async (s: TestServer, path: string) => {
  const res = await s.req(`/workspace/${s.wsId}${path}`, { token: CLIENT_TOKEN })
  assert.is(res.status, 200, `GET ${path}`)
  return res.json()
}
const send = (s: TestServer, method: string, path: string, json?: unknown) =>
  s.req(`/workspace/${s.wsId}${path}`, { method, token: CLIENT_TOKEN, json })

test("config reads both documents and a patch keeps the file's comments and formatting", async () => {
  const s = await startTestServer()
  try {
    const config = await get(s, '/config')
    assert.is(config.opencode.model, 'anthropic/claude-sonnet-4')
    assert.equal(config.workspace.workspace, { name: 'Workspace basic' })
    assert.is(config.updatedAt, null)
    const res = await send(s, 'PATCH', '/config', {
      opencode: { model: 'openai/gpt-5', share: 'disabled' },
      workspace: { reload: { auto: true } },
    })
    assert.is(res.status, 200)
    assert.type((await res.json()).updatedAt, 'number')
    const text = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    assert.ok(text.includes('// Project config for the workspace-basic fixture.'))
    assert.ok(text.includes('/* Plugins loaded from npm */'))
    assert.ok(text.includes('// A local server with a secret in its environment'))
    assert.ok(text.includes('"model": "openai/gpt-5", // the default model'))
    assert.ok(text.includes('"share": "disabled"'))
    const after = await get(s, '/config')
    assert.is(after.opencode.model, 'openai/gpt-5')
    assert.equal(after.workspace.reload, { auto: true })
    assert.is(after.workspace.version, 1)
    assert.type(after.updatedAt, 'number')
    const removed = await send(s, 'PATCH', '/config', { opencode: { share: null } })
    assert.is(removed.status, 200)
    assert.is((await get(s, '/config')).opencode.share, undefined)
    const empty = await send(s, 'PATCH', '/config', {})
    assert.is(empty.status, 400)
  } finally {
    await s.dispose()
  }
})

test('invalid JSONC on disk answers 422 invalid_jsonc with offsets', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    writeFileSync(join(s.root, 'opencode.jsonc'), '{ "model": "a", oops }\n')
    s.app.services.workspaces.get(s.wsId).cache.invalidate()
    const res = await s.req(`/workspace/${s.wsId}/config`, { token: CLIENT_TOKEN })
    assert.is(res.status, 422)
    const body = await res.json()
    assert.is(body.code, 'invalid_jsonc')
    assert.ok(body.details.length >= 1)
    assert.type(body.details[0].offset, 'number')
    assert.type(body.details[0].length, 'number')
    assert.type(body.details[0].code, 'string')
    const patch = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { model: 'x' } },
    })
    assert.is(patch.status, 422, 'a patch over an unparsable file fails before asking for approval')
    assert.equal((await (await s.req('/approvals', { hostToken: 'test-host-token-0123456789ab' })).json()).items, [])
    assert.is((await s.req(`/workspace/${s.wsId}/mcp`, { token: CLIENT_TOKEN })).status, 422)
  } finally {
    await s.dispose()
  }
})

test('plugins list config specs and plugin files, de-duplicated, and round-trip add and remove', async () => {
  const s = await startTestServer()
  try {
    const list = await get(s, '/plugins')
    assert.equal(list.items.map((p: { spec: string }) => p.spec).slice(0, 2), [
      'opencode-wakatime@1.2.0',
      '@acme/opencode-lint',
    ])
    assert.ok(
      list.items.some(
        (p: { source: string; path?: string }) =>
          p.source === 'dir.project' && p.path === '.opencode/plugins/local-notes.ts',
      ),
    )
    const added = await (await send(s, 'POST', '/plugins', { spec: '@acme/extra@2.0.0' })).json()
    assert.ok(added.items.some((p: { spec: string }) => p.spec === '@acme/extra@2.0.0'))
    const duplicate = await (await send(s, 'POST', '/plugins', { spec: '@acme/extra@3.0.0' })).json()
    assert.is(duplicate.items.filter((p: { spec: string }) => p.spec.startsWith('@acme/extra')).length, 1)
    assert.ok(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8').includes('/* Plugins loaded from npm */'))
    const removed = await send(s, 'DELETE', '/plugins/%40acme%2Fextra')
    assert.is(removed.status, 200)
    assert.not.ok((await removed.json()).items.some((p: { spec: string }) => p.spec.startsWith('@acme/extra')))
    assert.is((await send(s, 'DELETE', '/plugins/local-notes')).status, 200)
    assert.not.ok(existsSync(join(s.root, '.opencode/plugins/local-notes.ts')))
    assert.is((await send(s, 'DELETE', '/plugins/nothing-here')).status, 404)
    assert.is((await (await send(s, 'POST', '/plugins', { spec: '  ' })).json()).code, 'invalid_plugin_spec')
  } finally {
    await s.dispose()
  }
})

test('a plugin given with options is listed, kept intact by other plugin edits, and removed whole', async () => {
  const s = await startTestServer({ fixture: false })
  try {
    const withOptions = ['@acme/opencode-lint', { strict: true }]
    writeFileSync(join(s.root, 'opencode.json'), JSON.stringify({ plugin: ['opencode-wakatime@1.2.0', withOptions] }))
    const plugins = () => JSON.parse(readFileSync(join(s.root, 'opencode.json'), 'utf8')).plugin
    const specs = (body: { items: Array<{ spec: string }> }) => body.items.map((p) => p.spec)
    assert.equal(specs(await get(s, '/plugins')), ['opencode-wakatime@1.2.0', '@acme/opencode-lint'])
    assert.is((await send(s, 'POST', '/plugins', { spec: '@acme/opencode-lint@2.0.0' })).status, 200)
    assert.is((await send(s, 'POST', '/plugins', { spec: 'opencode-notifier' })).status, 200)
    assert.equal(plugins(), ['opencode-wakatime@1.2.0', withOptions, 'opencode-notifier'])
    assert.is((await send(s, 'DELETE', '/plugins/opencode-wakatime')).status, 200)
    assert.equal(plugins(), [withOptions, 'opencode-notifier'])
    assert.is((await send(s, 'DELETE', '/plugins/%40acme%2Fopencode-lint')).status, 200)
    assert.equal(plugins(), ['opencode-notifier'])
  } finally {
    await s.dispose()
  }
})

test('skills round-trip with frontmatter rules enforced', async () => {
  const s = await startTestServer()
  try {
    const list = await get(s, '/skills')
    assert.equal(
      list.items.map((x: { name: string }) => x.name),
      ['hello-world'],
    )
    const one = await get(s, '/skills/hello-world')
    assert.is(one.item.description, 'Greets the user and explains what this workspace is for.')
    assert.match(one.content, /# Hello world/)
    const created = await send(s, 'POST', '/skills', {
      name: 'release-notes',
      content: '---\nname: release-notes\nlicense: MIT\n---\n\nWrite notes.',
      description: 'Drafts release notes.',
    })
    assert.is(created.status, 200)
    assert.is((await created.json()).description, 'Drafts release notes.')
    const text = readFileSync(join(s.root, '.opencode/skills/release-notes/SKILL.md'), 'utf8')
    assert.match(
      text,
      /^---\nname: release-notes\ndescription: Drafts release notes.\nlicense: MIT\n---\n\nWrite notes.\n$/,
    )
    assert.equal(
      (await get(s, '/skills')).items.map((x: { name: string }) => x.name),
      ['hello-world', 'release-notes'],
    )
    assert.is(
      (await (await send(s, 'POST', '/skills', { name: 'Bad_Name', content: 'x', description: 'd' })).json()).code,
      'invalid_skill_name',
    )
    assert.is(
      (await (await send(s, 'POST', '/skills', { name: 'a'.repeat(65), content: 'x', description: 'd' })).json()).code,
      'invalid_skill_name',
    )
    const mismatch = await send(s, 'POST', '/skills', {
      name: 'one',
      content: '---\nname: two\ndescription: d\n---\nx',
    })
    assert.is((await mismatch.json()).code, 'invalid_skill_name')
    const noDescription = await send(s, 'POST', '/skills', { name: 'one', content: 'body only' })
    assert.is(noDescription.status, 422)
    assert.is((await noDescription.json()).code, 'invalid_description')
    assert.is(
      (await send(s, 'POST', '/skills', { name: 'one', content: 'x', description: 'd'.repeat(1025) })).status,
      422,
    )
    assert.is(
      (await (await send(s, 'POST', '/skills', { name: 'one', content: '   ', description: 'd' })).json()).code,
      'invalid_skill_content',
    )
    const deleted = await send(s, 'DELETE', '/skills/release-notes')
    assert.is((await deleted.json()).ok, true)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/release-notes')))
    assert.is((await send(s, 'DELETE', '/skills/release-notes')).status, 404)
    assert.is((await s.req(`/workspace/${s.wsId}/skills/nope`, { token: CLIENT_TOKEN })).status, 404)
  } finally {
    await s.dispose()
  }
})

test('MCP entries round-trip, validate, toggle, and never echo secrets', async () => {
  const s = await startTestServer()
  try {
    const listText = await (await s.req(`/workspace/${s.wsId}/mcp`, { token: CLIENT_TOKEN })).text()
    assert.not.ok(listText.includes('fixture-secret-env-value'))
    assert.not.ok(listText.includes('fixture-secret-header-value'))
    const items = JSON.parse(listText).items
    assert.equal(
      items.map((m: { name: string }) => m.name),
      ['files', 'tracker'],
    )
    assert.equal(items[0].config.environment, { FILES_API_KEY: '********' })
    assert.equal(items[1].config.headers, { Authorization: '********' })
    const added = await send(s, 'POST', '/mcp', {
      name: 'search',
      config: { type: 'remote', url: 'https://search.example/mcp', headers: { 'X-Key': 'added-secret' } },
    })
    assert.is(added.status, 200)
    const addedText = await added.text()
    assert.ok(addedText.includes('"search"'))
    assert.not.ok(addedText.includes('added-secret'))
    assert.ok(
      readFileSync(join(s.root, 'opencode.jsonc'), 'utf8').includes(
        '// A local server with a secret in its environment',
      ),
    )
    for (const [body, code] of [
      [{ name: '-bad', config: { type: 'local', command: ['x'] } }, 'invalid_mcp_name'],
      [{ name: 'x', config: { type: 'local', command: [] } }, 'invalid_mcp_config'],
      [{ name: 'x', config: { type: 'local', command: ['ok', 3] } }, 'invalid_mcp_config'],
      [{ name: 'x', config: { type: 'remote', url: 'ftp://nope' } }, 'invalid_mcp_config'],
      [{ name: 'x' }, 'invalid_payload'],
    ] as const) {
      const res = await send(s, 'POST', '/mcp', body)
      assert.is(res.status, 400, JSON.stringify(body))
      assert.is((await res.json()).code, code)
    }
    const paused = await (await send(s, 'PATCH', '/mcp/tracker', { enabled: false })).json()
    assert.is(paused.changed, true)
    assert.is(paused.enabled, false)
    const auditBefore = (await get(s, '/audit')).items.length
    const noop = await (await send(s, 'PATCH', '/mcp/tracker', { enabled: false })).json()
    assert.is(noop.changed, false)
    assert.is((await get(s, '/audit')).items.length, auditBefore)
    assert.is((await send(s, 'PATCH', '/mcp/tracker', { enabled: 'false' })).status, 400)
    assert.is((await send(s, 'PATCH', '/mcp/missing', { enabled: true })).status, 404)
    const removed = await (await send(s, 'DELETE', '/mcp/search')).json()
    assert.equal(
      removed.items.map((m: { name: string }) => m.name),
      ['files', 'tracker'],
    )
    assert.is((await send(s, 'DELETE', '/mcp/search')).status, 404)
    const audit = (await get(s, '/audit')).items.map((e: { action: string }) => e.action)
    assert.equal(audit, ['mcp.remove', 'mcp.update', 'mcp.add'])
    assert.not.ok(JSON.stringify(await get(s, '/audit')).includes('secret-'))
  } finally {
    await s.dispose()
  }
})

test('commands round-trip with frontmatter and a null model omitted', async () => {
  const s = await startTestServer()
  try {
    const list = await get(s, '/commands')
    assert.equal(list.items, [
      {
        name: 'review',
        description: 'Review the current change',
        agent: 'reviewer',
        subtask: true,
        template: 'Review the staged diff and list problems by severity.',
        model: null,
        scope: 'workspace',
      },
    ])
    const res = await send(s, 'POST', '/commands', {
      name: '/ship-it',
      template: '  Ship $ARGUMENTS.  ',
      description: 'Ship it',
      model: null,
      subtask: false,
    })
    assert.is(res.status, 200)
    const text = readFileSync(join(s.root, '.opencode/commands/ship-it.md'), 'utf8')
    assert.is(text, '---\ndescription: Ship it\nsubtask: false\n---\n\nShip $ARGUMENTS.\n')
    const items = (await res.json()).items
    assert.equal(
      items.find((c: { name: string }) => c.name === 'ship-it'),
      {
        name: 'ship-it',
        description: 'Ship it',
        subtask: false,
        template: 'Ship $ARGUMENTS.',
        model: null,
        scope: 'workspace',
      },
    )
    assert.is(
      (await (await send(s, 'POST', '/commands', { name: 'bad name', template: 'x' })).json()).code,
      'invalid_command_name',
    )
    assert.is(
      (await (await send(s, 'POST', '/commands', { name: 'ok', template: ' ' })).json()).code,
      'invalid_command_template',
    )
    assert.equal(await (await send(s, 'DELETE', '/commands/ship-it')).json(), { ok: true })
    assert.not.ok(existsSync(join(s.root, '.opencode/commands/ship-it.md')))
    assert.is((await send(s, 'DELETE', '/commands/ship-it')).status, 404)
  } finally {
    await s.dispose()
  }
})

test('read-only mode refuses every write with 403 read_only, changes nothing and audits nothing', async () => {
  const s = await startTestServer({ readOnly: true })
  try {
    const before = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    const writes: Array<[string, string, unknown]> = [
      ['PATCH', '/config', { opencode: { model: 'x' } }],
      ['POST', '/plugins', { spec: 'x' }],
      ['DELETE', '/plugins/opencode-wakatime', undefined],
      ['POST', '/skills', { name: 'x', content: 'x', description: 'x' }],
      ['DELETE', '/skills/hello-world', undefined],
      ['POST', '/mcp', { name: 'x', config: { type: 'local', command: ['x'] } }],
      ['PATCH', '/mcp/tracker', { enabled: false }],
      ['DELETE', '/mcp/files', undefined],
      ['POST', '/commands', { name: 'x', template: 'x' }],
      ['DELETE', '/commands/review', undefined],
    ]
    for (const [method, path, body] of writes) {
      const res = await send(s, method, path, body)
      assert.is(res.status, 403, `${method} ${path}`)
      assert.is((await res.json()).code, 'read_only')
    }
    const token = await s.req('/tokens', {
      method: 'POST',
      hostToken: 'test-host-token-0123456789ab',
      json: { scope: 'viewer' },
    })
    assert.is(token.status, 403)
    assert.is(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'), before)
    assert.ok(existsSync(join(s.root, '.opencode/skills/hello-world/SKILL.md')))
    assert.equal((await get(s, '/audit')).items, [])
    const caps = await (await s.req('/capabilities', { token: CLIENT_TOKEN })).json()
    assert.is(caps.config.write, false)
  } finally {
    await s.dispose()
  }
})

test.run()
