/**
 * MCP header and environment values are credentials: masked in `GET …/config`, left out of
 * exports unless the host asks and approves, and never overwritten by a client writing the mask back.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'

const test = suite('workspace/mcp secrets', { timeoutMs: 30_000 })

const HEADER = 'Bearer plainheadervalue42'
const ENV_VALUE = 'plain-env-value-42'
const URL_PASSWORD = 'urlpw42'
const CONFIG = {
  mcp: {
    remote1: {
      type: 'remote',
      url: `https://svc:${URL_PASSWORD}@mcp.example/api`,
      headers: { Authorization: HEADER },
    },
    local1: { type: 'local', command: ['run-mcp'], environment: { SOME_SETTING: ENV_VALUE } },
  },
}
const SECRETS = [HEADER, ENV_VALUE, URL_PASSWORD]

async function withConfig(fn: (s: TestServer) => Promise<void>, approval: 'auto' | 'manual' = 'auto'): Promise<void> {
  const s = await startTestServer({ fixture: false, approval, watch: false })
  try {
    writeFileSync(join(s.root, 'opencode.json'), JSON.stringify(CONFIG, null, 2))
    await fn(s)
  } finally {
    await s.dispose()
  }
}

const issue = async (s: TestServer, scope: string): Promise<string> =>
  (await (await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope } })).json()).token

const leaks = (text: string) => SECRETS.filter((secret) => text.includes(secret))

test('GET config masks MCP headers, environment values and URL passwords for every bearer caller', async () => {
  await withConfig(async (s) => {
    for (const token of [await issue(s, 'viewer'), CLIENT_TOKEN, await issue(s, 'owner')]) {
      const res = await s.req(`/workspace/${s.wsId}/config`, { token })
      assert.is(res.status, 200)
      const text = await res.text()
      assert.equal(leaks(text), [])
      const mcp = JSON.parse(text).opencode.mcp
      assert.is(mcp.local1.environment.SOME_SETTING, '********')
      assert.is(mcp.remote1.headers.Authorization, '********')
    }
  })
})

test('writing the masked config back keeps the stored MCP values', async () => {
  await withConfig(async (s) => {
    const read = await (await s.req(`/workspace/${s.wsId}/config`, { token: CLIENT_TOKEN })).json()
    const mcp = read.opencode.mcp
    mcp.local1.enabled = false
    const res = await s.req(`/workspace/${s.wsId}/config`, {
      method: 'PATCH',
      token: CLIENT_TOKEN,
      json: { opencode: { mcp } },
    })
    assert.is(res.status, 200)
    const onDisk = JSON.parse(readFileSync(join(s.root, 'opencode.json'), 'utf8'))
    assert.equal(onDisk.mcp.local1.environment, { SOME_SETTING: ENV_VALUE })
    assert.equal(onDisk.mcp.remote1.headers, { Authorization: HEADER })
    assert.is(onDisk.mcp.remote1.url, CONFIG.mcp.remote1.url)
    assert.is(onDisk.mcp.local1.enabled, false)
  })
})

test('exports leave MCP secrets out even with sensitive=include; only the host may ask for them', async () => {
  await withConfig(async (s) => {
    const viewer = await issue(s, 'viewer')
    for (const sensitive of ['include', 'exclude']) {
      const res = await s.req(`/workspace/${s.wsId}/export?sensitive=${sensitive}`, { token: viewer })
      assert.is(res.status, 200, sensitive)
      const text = await res.text()
      assert.equal(leaks(text), [], sensitive)
      assert.equal(JSON.parse(text).opencode.mcp.local1.environment, { SOME_SETTING: '' }, 'names stay')
    }
    const refused = await s.req(`/workspace/${s.wsId}/export?sensitive=include&mcpSecrets=include`, {
      token: CLIENT_TOKEN,
    })
    assert.is(refused.status, 403)
    assert.is((await refused.json()).code, 'mcp_secrets_host_only')
    const owner = await issue(s, 'owner')
    const full = await s.req(`/workspace/${s.wsId}/export?sensitive=include&mcpSecrets=include`, { token: owner })
    assert.is(full.status, 200)
    assert.equal(leaks(await full.text()).sort(), [...SECRETS].sort())
  })
})

test('in manual mode the host must approve an export with MCP secrets', async () => {
  await withConfig(async (s) => {
    const owner = await issue(s, 'owner')
    const asked = s.req(`/workspace/${s.wsId}/export?sensitive=include&mcpSecrets=include`, { token: owner })
    let pending: { id: string; action: string } | undefined
    for (let i = 0; i < 100 && !pending; i++) {
      pending = (await (await s.req('/approvals', { hostToken: HOST_TOKEN })).json()).items[0]
      if (!pending) await new Promise((r) => setTimeout(r, 30))
    }
    assert.is(pending?.action, 'workspace.export.mcp_secrets')
    await s.req(`/approvals/${pending!.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    const res = await asked
    assert.is(res.status, 403)
    assert.is((await res.json()).code, 'export_denied')
  }, 'manual')
})

test.run()
