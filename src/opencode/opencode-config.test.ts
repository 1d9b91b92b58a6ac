/**
 * The `opencode.json(c)` shape and MCP entries against what OpenCode itself does. The refused and
 * accepted cases below were each run through `opencode debug config` of opencode-ai 1.18.33 (the
 * version in package.json); `tests/e2e/opencode-real-config.test.ts` runs the fixtures through it.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../tests/harness.ts'
import {
  checkMcpServer,
  isMcpName,
  MASK,
  maskMcpEntry,
  mcpEntries,
  stripMcpSecrets,
  unmaskMcpEntry,
} from './mcp-entries.ts'
import { checkOpencodeConfig, parseJsonc, pluginSpecOf } from './opencode-config.ts'

const test = suite('opencode/config')

const FIXTURES = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../fixtures/opencode')

async function fixture(file: string): Promise<Record<string, unknown>> {
  const { value, problems } = await parseJsonc(readFileSync(join(FIXTURES, file), 'utf8'))
  assert.equal(problems, [], file)
  return value as Record<string, unknown>
}

test('the real-shaped opencode.jsonc and opencode.json fixtures parse and are valid', async () => {
  const jsonc = await fixture('opencode.jsonc')
  assert.equal(checkOpencodeConfig(jsonc), [])
  assert.equal(Object.keys(mcpEntries(jsonc)), ['files', 'tracker', 'github'])
  assert.equal((jsonc.plugin as unknown[]).map(pluginSpecOf), ['opencode-wakatime@1.2.0', '@acme/opencode-lint'])
  assert.equal(jsonc['x-team'], { owner: 'platform' }, 'unknown keys are kept, as OpenCode ignores them')
  const json = await fixture('opencode.json')
  assert.equal(checkOpencodeConfig(json), [])
  assert.equal(Object.keys(mcpEntries(json)), ['docs', 'db'])
})

test('a JSONC syntax error is reported with its offset, and an empty file reads as an empty config', async () => {
  const broken = await parseJsonc('{ "model": "a", oops }')
  assert.ok(broken.problems.length >= 1)
  assert.is(broken.problems[0]!.offset, 16)
  assert.equal(await parseJsonc('  \n'), { value: {}, problems: [] })
  assert.equal(checkOpencodeConfig([1]), [{ path: '', message: 'the config must be a JSON object' }])
})

test('what OpenCode refuses to load is refused at the same field', () => {
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ $schema: 5 }, '$schema'],
    [{ plugin: 'opencode-wakatime' }, 'plugin'],
    [{ instructions: 'AGENTS.md' }, 'instructions'],
    [{ mcp: { x: { type: 'local', command: 'npx server' } } }, 'mcp.x.command'],
    [{ mcp: { x: { type: 'local', command: ['a', 1] } } }, 'mcp.x.command.1'],
    [{ mcp: { x: { type: 'local', command: ['a'], timeout: '5' } } }, 'mcp.x.timeout'],
    [{ mcp: { x: { type: 'local', command: ['a'], timeout: -1.5 } } }, 'mcp.x.timeout'],
    [{ mcp: { x: { type: 'local', command: ['a'], enabled: 'yes' } } }, 'mcp.x.enabled'],
    [{ mcp: { x: { type: 'local', command: ['a'], environment: { A: 1 } } } }, 'mcp.x.environment.A'],
    [{ mcp: { x: { type: 'remote', url: 'https://a', headers: { a: 1 } } } }, 'mcp.x.headers.a'],
    [{ mcp: { x: { type: 'remote', url: 'https://a', oauth: true } } }, 'mcp.x.oauth'],
    [{ mcp: { x: { type: 'remote', url: 'https://a', oauth: { callbackPort: '1' } } } }, 'mcp.x.oauth.callbackPort'],
    [{ mcp: { x: { type: 'other' } } }, 'mcp.x.type'],
    [{ agent: { rev: { mode: 'weird' } } }, 'agent.rev.mode'],
    [{ agent: { rev: { temperature: 'hot' } } }, 'agent.rev.temperature'],
    [{ command: { c: { description: 'no template' } } }, 'command.c.template'],
    [{ command: { c: { template: 't', subtask: 'yes' } } }, 'command.c.subtask'],
  ]
  for (const [config, path] of cases) {
    const issues = checkOpencodeConfig(config)
    assert.is(issues[0]?.path, path, JSON.stringify(config))
    assert.is(issues.length, 1, `one issue for ${JSON.stringify(config)}: ${JSON.stringify(issues)}`)
  }
})

test('what OpenCode loads is never refused, however odd', () => {
  for (const config of [
    { mcp: { x: { type: 'local', command: [] } } },
    { mcp: { x: { type: 'remote', url: 'not a url' } } },
    { mcp: { x: { type: 'remote', url: 'ftp://x.example' } } },
    { mcp: { x: { enabled: false } } },
    { mcp: { x: { type: 'local', command: ['a'], weird: 2 } } },
    { mcp: { x: { type: 'remote', url: 'https://a', oauth: { clientId: 'a', foo: 1 } } } },
    { agent: { rev: { temperature: 5, weird: 1 } }, command: { c: { template: 't', weird: 1 } } },
    { plugin: ['a', ['b', { option: 1 }]] },
    { bogusTopKey: 1 },
  ])
    assert.equal(checkOpencodeConfig(config), [], JSON.stringify(config))
})

test('a server added through an API needs a runnable command or an http(s) url, and loses unknown keys', () => {
  const refused: Array<[unknown, string]> = [
    [{ type: 'local', command: [] }, 'command'],
    [{ type: 'local', command: ['npx', ''] }, 'command.1'],
    [{ type: 'local' }, 'command'],
    [{ type: 'remote', url: 'ftp://x.example' }, 'url'],
    [{ type: 'remote', url: ' https://x.example' }, 'url'],
    [{ type: 'remote', url: 'https://a', headers: { a: 1 } }, 'headers.a'],
    [{ type: 'local', command: ['a'], timeout: 0 }, 'timeout'],
    [{ enabled: false }, 'type'],
    [{ type: 'sse' }, 'type'],
  ]
  for (const [entry, path] of refused) {
    const checked = checkMcpServer(entry)
    assert.is(checked.ok, false, JSON.stringify(entry))
    if (!checked.ok) assert.is(checked.path, path, JSON.stringify(entry))
  }
  const ok = checkMcpServer({ enabled: true, type: 'local', note: 'mine', command: ['uvx', 'srv'], timeout: 5000 })
  assert.equal(ok, { ok: true, server: { enabled: true, type: 'local', command: ['uvx', 'srv'], timeout: 5000 } })
  assert.equal(Object.keys(ok.ok ? ok.server : {}), ['enabled', 'type', 'command', 'timeout'], 'the writer’s order')
  assert.ok(isMcpName('github_2') && isMcpName('A-b'))
  assert.not.ok(isMcpName('-x') || isMcpName('a.b') || isMcpName('x'.repeat(65)))
})

test('masking hides every secret value, export strips them, and a masked entry written back keeps them', async () => {
  const json = await fixture('opencode.json')
  const jsonc = await fixture('opencode.jsonc')
  const docs = mcpEntries(json).docs!
  const masked = maskMcpEntry(docs)
  assert.is(masked.url, `https://${MASK}:${MASK}@docs.example.com/mcp`)
  assert.equal(masked.oauth, { clientId: 'docs-cli', clientSecret: MASK, scope: 'read' })
  assert.not.ok(JSON.stringify(masked).includes('pa55') || JSON.stringify(masked).includes('docs-oauth-secret'))
  assert.equal(unmaskMcpEntry(masked, docs), docs)
  const files = mcpEntries(jsonc).files!
  assert.equal(maskMcpEntry(files).environment, { FILES_API_KEY: MASK })
  assert.equal(unmaskMcpEntry({ ...maskMcpEntry(files), timeout: 20 }, files), { ...files, timeout: 20 })
  const stripped = stripMcpSecrets(docs)
  assert.is(stripped.url, 'https://docs.example.com/mcp')
  assert.equal(stripped.oauth, { clientId: 'docs-cli', scope: 'read' })
  assert.equal(stripMcpSecrets(mcpEntries(jsonc).tracker!).headers, { Authorization: '' })
  const changed = unmaskMcpEntry({ ...maskMcpEntry(files), environment: { FILES_API_KEY: 'new-value' } }, files)
  assert.equal(changed.environment, { FILES_API_KEY: 'new-value' }, 'a value the client changed is kept')
})

test.run()
