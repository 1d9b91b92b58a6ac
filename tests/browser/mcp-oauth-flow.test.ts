/**
 * The whole OAuth flow of an MCP client against `/mcp`, driven by the MCP SDK's own client and its
 * OAuth client provider: discovery from the 401, dynamic registration, authorization in headless
 * Chromium (Approve on the console's consent page), the code exchanged with PKCE, resources and a
 * tool over the token, a refresh, and refusal once the grant is revoked.
 */
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { Browser } from 'playwright-core'
import { assert, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { browserAvailable, launchBrowser } from './browser-kit.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SESSION_KEY = 'service-console.control-plane-session'

/** An in-memory OAuth client provider, as an MCP client would keep one. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | null = null
  constructor(readonly redirect: string) {}
  get redirectUrl() {
    return this.redirect
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'MCP Flow Test',
      redirect_uris: [this.redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'catalog:read',
    }
  }
  clientInformation() {
    return this.info
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

if (browserAvailable()) {
  const test = suite('MCP client OAuth flow in a browser', { timeoutMs: 180_000 })

  test('an MCP client signs in with OAuth, reads a skill and calls a tool, refreshes, and is refused after revocation', async () => {
    const dir = tempDir('svc-browser-mcp-oauth-')
    let server: ChildServer | undefined
    let browser: { browser: Browser; close(): Promise<void> } | undefined
    try {
      server = await startChild(
        process.execPath,
        ['bin/service-server.ts', '--mode', 'control-plane', '--data-dir', join(dir.path, 'data'), '--port', '0'],
        { cwd: ROOT, timeoutMs: 60_000, env: { SERVICE_OPEN_SIGN_UP: 'true' } },
      )
      const url = server.url
      const api = async (method: string, path: string, token: string, body?: unknown) => {
        const response = await fetch(`${url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: response.status, body: (await response.json().catch(() => null)) as any }
      }
      const signUp = await fetch(`${url}/v1/auth/sign-up`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'ada@mcp-oauth.test', password: 'a long password', name: 'Ada' }),
      })
      const session: string = ((await signUp.json()) as any).session.token
      assert.is((await api('POST', '/v1/orgs', session, { name: 'Acme' })).status, 201)
      const skillMd = '---\nname: flow-skill\ndescription: Reached over OAuth\n---\n\nDo it.\n'
      const skill = await api('POST', '/v1/skills', session, { skillMd })
      const hub = await api('POST', '/v1/skill-hubs', session, { name: 'team-hub' })
      await api('POST', `/v1/skill-hubs/${hub.body.item.id}/skills`, session, { skillId: skill.body.item.id })
      assert.is(
        (await api('POST', `/v1/skill-hubs/${hub.body.item.id}/assignments`, session, { orgWide: true })).status,
        201,
      )

      const provider = new MemoryProvider(`${url}/oauth-test-callback`)
      const mcpUrl = new URL(`${url}/mcp`)
      const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })
      let unauthorized: unknown = null
      await new Client({ name: 'flow', version: '1' }).connect(first).catch((error) => (unauthorized = error))
      assert.ok(unauthorized, 'without a token the client is sent to authorize')
      assert.ok(provider.info?.client_id, 'the client registered itself')
      assert.ok(provider.authorizationUrl, 'discovery led to the authorization endpoint')
      assert.is(provider.authorizationUrl!.searchParams.get('resource'), `${url}/mcp`)
      assert.is(provider.authorizationUrl!.searchParams.get('code_challenge_method'), 'S256')

      // The person approves in the console.
      browser = await launchBrowser()
      const context = await browser.browser.newContext()
      const page = await context.newPage()
      const authorize = await fetch(provider.authorizationUrl!, { redirect: 'manual' })
      assert.is(authorize.status, 302)
      await page.goto(`${url}/console/`)
      await page.evaluate(([key, token]) => sessionStorage.setItem(key!, token!), [SESSION_KEY, session])
      await page.goto(authorize.headers.get('location')!)
      await page.reload()
      await page.getByRole('heading', { name: 'MCP Flow Test asks for access' }).waitFor()
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.waitForURL(/oauth-test-callback\?code=/)
      const code = new URL(page.url()).searchParams.get('code')!
      await first.finishAuth(code)
      assert.ok(provider.saved?.access_token.startsWith('oat_'))

      const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider })
      const client = new Client({ name: 'flow', version: '1' })
      await client.connect(transport)
      const md = await client.readResource({ uri: 'skill://flow-skill/SKILL.md' })
      assert.is((md.contents[0] as { text: string }).text, skillMd)
      const found = await client.callTool({ name: 'search', arguments: { query: 'flow' } })
      assert.equal(
        ((found.structuredContent as { items: Array<{ id: string }> }).items ?? []).map((i) => i.id),
        [skill.body.item.id],
      )
      // By default a client asks for read scopes only (the challenge's scope), so it cannot write.
      assert.is(provider.saved!.scope, 'delivery:read catalog:read')
      assert.not.ok((await client.listTools()).tools.some((t) => t.name === 'create_skill'))
      await client.close()

      // Refresh: a stale access token makes the client use its refresh token, and it works again.
      const before = provider.saved!
      provider.saved = { ...before, access_token: 'oat_stale' }
      const again = new Client({ name: 'flow', version: '1' })
      await again.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }))
      assert.ok(provider.saved.access_token !== 'oat_stale' && provider.saved.access_token !== before.access_token)
      assert.ok((await again.listResources()).resources.length > 1)
      await again.close()

      // Revoked: the next connection is refused.
      const revoked = await fetch(`${url}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: provider.saved.refresh_token!, client_id: provider.info!.client_id }),
      })
      assert.is(revoked.status, 200)
      const raw = await fetch(mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${provider.saved.access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
      })
      assert.is(raw.status, 401)
      await context.close()
    } finally {
      await browser?.close()
      await server?.stop()
      dir.remove()
    }
  })

  test.run()
}
