/**
 * The MCP endpoint as an OAuth protected resource: 401 names the metadata document, the document
 * names this server as the authorization server, tokens must be bound to `/mcp` (RFC 8707), a
 * token's scopes decide which tools it sees, and a revoked token is refused at once.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { pollDevice, postForm, startDevice } from '../oauth/oauth-test-kit.ts'
import type { McpTestPlane } from './mcp-test-kit.ts'
import { connectClient, startMcpTestPlane } from './mcp-test-kit.ts'

const test = suite('control-plane/mcp/oauth', { timeoutMs: 60_000 })

/** A device-flow token approved by the member, with `scope` and optionally `resource`. */
async function memberToken(t: McpTestPlane, fields: Record<string, string>) {
  const started = await startDevice(t.plane.client, 'service-cli', fields)
  const approved = await t.plane.client.post('/v1/oauth/device/approve', {
    token: t.org.member.token,
    json: { userCode: started.user_code },
  })
  assert.is(approved.status, 200, JSON.stringify(approved.body))
  const res = await pollDevice(t.plane.client, started.device_code, 'service-cli')
  assert.is(res.status, 200, JSON.stringify(res.body))
  return res.body as { access_token: string; refresh_token: string; scope: string }
}

const initialize = (mcpUrl: string, headers: Record<string, string>) =>
  fetch(mcpUrl, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  })

test('a 401 names the protected-resource metadata, which names this server as the authorization server', async () => {
  const t = await startMcpTestPlane()
  try {
    const refused = await initialize(t.mcpUrl, {})
    assert.is(refused.status, 401)
    const metadataUrl = `${t.url}/.well-known/oauth-protected-resource/mcp`
    assert.is(
      refused.headers.get('www-authenticate'),
      `Bearer resource_metadata="${metadataUrl}", scope="delivery:read catalog:read"`,
    )
    const wrongKey = await initialize(t.mcpUrl, { 'x-api-key': 'svc_not-a-real-key' })
    assert.is(wrongKey.status, 401)
    assert.ok(wrongKey.headers.get('www-authenticate')?.includes(metadataUrl))
    for (const url of [metadataUrl, `${t.url}/.well-known/oauth-protected-resource`]) {
      const metadata = await fetch(url)
      assert.is(metadata.status, 200)
      const body = (await metadata.json()) as Record<string, unknown>
      assert.is(body.resource, t.mcpUrl)
      assert.equal(body.authorization_servers, [t.url])
      assert.equal(body.scopes_supported, ['delivery:read', 'catalog:read', 'catalog:write'])
    }
  } finally {
    await t.close()
  }
})

test('a token bound to /mcp works with what its scopes allow; one for another resource or revoked is refused', async () => {
  const t = await startMcpTestPlane()
  try {
    const bound = await memberToken(t, { scope: 'delivery:read', resource: t.mcpUrl })
    const { client } = await connectClient(t.mcpUrl, { token: bound.access_token })
    try {
      // delivery:read reads what is delivered; the catalog tools need catalog:read.
      assert.equal(
        (await client.listTools()).tools.map((tool) => tool.name),
        ['list_organizations'],
      )
      assert.equal(
        (await client.listResources()).resources.map((r) => r.uri),
        ['skills://index'],
      )
      const search = await client.callTool({ name: 'search', arguments: {} }).then(
        () => null,
        (error: { code?: number }) => error,
      )
      assert.is(search?.code, -32602, 'a tool the token may not use does not exist for it')
    } finally {
      await client.close()
    }
    // A token without a resource indicator, or for another resource, is not for this endpoint.
    const others: Array<Record<string, string>> = [
      { scope: 'delivery:read' },
      { scope: 'delivery:read', resource: 'https://elsewhere.test/mcp' },
    ]
    for (const fields of others) {
      const other = await memberToken(t, fields)
      const refused = await initialize(t.mcpUrl, { authorization: `Bearer ${other.access_token}` })
      assert.is(refused.status, 401)
      assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", resource_metadata="/)
    }
    // Revoked: refused on the next request.
    const revoked = await postForm(t.plane.client, '/oauth/revoke', {
      token: bound.access_token,
      client_id: 'service-cli',
    })
    assert.is(revoked.status, 200)
    const after = await initialize(t.mcpUrl, { authorization: `Bearer ${bound.access_token}` })
    assert.is(after.status, 401)
  } finally {
    await t.close()
  }
})

test.run()
