import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { parseJsonc } from '../../opencode/opencode-config.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/opencode config patch')

const FIXTURES = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../fixtures/opencode')

test('a config patch OpenCode could not load is refused before approval, naming the field', async () => {
  const s = await startTestServer({ approval: 'manual' })
  try {
    const before = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    for (const [opencode, path] of [
      [{ plugin: 'opencode-wakatime' }, 'opencode.plugin'],
      [{ mcp: { files: { type: 'local', command: 'npx server' } } }, 'opencode.mcp.files.command'],
      [{ agent: { reviewer: { mode: 'sometimes' } } }, 'opencode.agent.reviewer.mode'],
      [{ command: { test: { description: 'no template' } } }, 'opencode.command.test.template'],
    ] as const) {
      const res = await s.req(`/workspace/${s.wsId}/config`, {
        method: 'PATCH',
        token: CLIENT_TOKEN,
        json: { opencode },
      })
      assert.is(res.status, 400, JSON.stringify(opencode))
      const body = await res.json()
      assert.is(body.code, 'invalid_payload')
      assert.is(body.details.issues[0].path, path)
    }
    const pending = await s.req('/approvals', { hostToken: HOST_TOKEN })
    assert.is(pending.status, 200)
    assert.equal((await pending.json()).items, [], 'nobody was asked to approve')
    assert.is(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'), before, 'the file is untouched')
  } finally {
    await s.dispose()
  }
})

test('every key of a real-shaped opencode.jsonc can be written through a patch', async () => {
  const s = await startTestServer()
  try {
    const { value } = await parseJsonc(readFileSync(join(FIXTURES, 'opencode.jsonc'), 'utf8'))
    const res = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: value },
    })
    assert.is(res.status, 200, await res.clone().text())
    const written = await parseJsonc(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'))
    for (const [key, expected] of Object.entries(value as Record<string, unknown>))
      assert.equal((written.value as Record<string, unknown>)[key], expected, key)
  } finally {
    await s.dispose()
  }
})

test('a config patch nested 100 deep is 400 invalid_payload naming the limit; 60 deep is written', async () => {
  const s = await startTestServer({ approval: 'auto' })
  try {
    const nest = (levels: number) => {
      let value: unknown = 1
      for (let i = 0; i < levels; i++) value = { a: value }
      return value
    }
    const before = readFileSync(join(s.root, 'opencode.jsonc'), 'utf8')
    const deep = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { experimental: nest(100) } },
    })
    assert.is(deep.status, 400)
    const body = await deep.json()
    assert.is(body.code, 'invalid_payload')
    assert.is(body.details.maxDepth, 64)
    assert.is(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'), before, 'the file is untouched')
    const fine = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { experimental: nest(60) } },
    })
    assert.is(fine.status, 200, await fine.clone().text())
    const { value } = await parseJsonc(readFileSync(join(s.root, 'opencode.jsonc'), 'utf8'))
    assert.equal((value as { experimental: unknown }).experimental, nest(60))
  } finally {
    await s.dispose()
  }
})

test('an opencode.jsonc nested thousands deep on disk reads as 422 invalid_jsonc, not a crash', async () => {
  const s = await startTestServer()
  try {
    writeFileSync(join(s.root, 'opencode.jsonc'), `{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`)
    const res = await s.req(`/workspace/${s.wsId}/config`, { token: CLIENT_TOKEN })
    assert.is(res.status, 422)
    const body = await res.json()
    assert.is(body.code, 'invalid_jsonc')
    assert.is(body.details[0].code, 'NestingTooDeep')
  } finally {
    await s.dispose()
  }
})

test.run()
