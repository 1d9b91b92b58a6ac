import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser } from 'playwright-core'
import { assert, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { browserAvailable, cspViolations, launchBrowser, reviewPage } from './browser-kit.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SESSION_KEY = 'service-console.control-plane-session'

// Without chromium, browser-kit has said so in one line and the suite is left out.
if (browserAvailable()) {
  const test = suite('console in a browser: approving programs (OAuth)', { timeoutMs: 180_000 })
  const dir = tempDir('svc-browser-oauth-')
  let server: ChildServer
  let browser: { browser: Browser; close(): Promise<void> }
  let session = ''

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(session ? { authorization: `Bearer ${session}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: response.status, body: await response.json().catch(() => null) }
  }
  const form = async (path: string, fields: Record<string, string>) => {
    const response = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    })
    return { status: response.status, body: await response.json() }
  }
  /** A page of a signed-in browser at `url` (the session set before the console starts). */
  const signedInPage = async (url: string) => {
    const context = await browser.browser.newContext()
    const page = await context.newPage()
    const violations = cspViolations(page)
    page.on('dialog', (dialog) => void dialog.accept())
    await page.goto(`${server.url}/console/`)
    await page.evaluate(([key, token]) => sessionStorage.setItem(key!, token!), [SESSION_KEY, session])
    await page.goto(url)
    await page.reload()
    return { page, violations, close: () => context.close() }
  }

  test.before(async () => {
    server = await startChild(
      process.execPath,
      [
        'bin/service-server.ts',
        '--mode',
        'control-plane',
        '--data-dir',
        join(dir.path, 'data'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
      ],
      { cwd: ROOT, timeoutMs: 60_000 },
    )
    browser = await launchBrowser()
    const signed = await api('POST', '/v1/auth/sign-up', {
      email: 'ada@oauth.test',
      password: 'a long password',
      name: 'Ada',
    })
    session = signed.body.session.token
    assert.is((await api('POST', '/v1/orgs', { name: 'Acme' })).status, 201)
  })

  test.after(async () => {
    await browser?.close()
    await server?.stop()
    dir.remove()
  })

  test('a device sign-in is approved on the page the program names, and the program receives its token', async () => {
    const started = await form('/oauth/device_authorization', { client_id: 'opencode' })
    assert.is(started.status, 200)
    const { page, violations, close } = await signedInPage(started.body.verification_uri_complete)
    try {
      await page.getByRole('heading', { name: 'OpenCode asks to sign in as you' }).waitFor()
      assert.ok(await page.getByText(started.body.user_code).isVisible())
      assert.is(await page.getByLabel('For organization').locator('option:checked').textContent(), 'Acme')
      await reviewPage(page, 'oauth-device')
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.getByText('Approved: OpenCode is signed in to Acme').waitFor()
      const token = await form('/oauth/token', {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: started.body.device_code,
        client_id: 'opencode',
      })
      assert.is(token.status, 200)
      assert.equal(token.body.organization.name, 'Acme')
      assert.equal(violations, [])
    } finally {
      await close()
    }
  })

  test('an MCP client’s consent page shows what asks and for what, and Approve returns the browser to the client with a code', async () => {
    const redirect = `${server.url}/oauth-test-callback`
    const registered = await api('POST', '/oauth/register', { redirect_uris: [redirect], client_name: 'Claude Test' })
    assert.is(registered.status, 201)
    const verifier = randomBytes(32).toString('base64url')
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: registered.body.client_id,
      redirect_uri: redirect,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      scope: 'delivery:read catalog:read',
      state: 'st8',
      resource: `${server.url}/mcp`,
    })
    const authorize = await fetch(`${server.url}/oauth/authorize?${query}`, { redirect: 'manual' })
    assert.is(authorize.status, 302)
    const { page, violations, close } = await signedInPage(authorize.headers.get('location')!)
    try {
      await page.getByRole('heading', { name: 'Claude Test asks for access' }).waitFor()
      assert.ok(await page.getByText('catalog:read').isVisible())
      assert.ok(await page.getByText(`${server.url}/mcp`).isVisible())
      await reviewPage(page, 'oauth-consent')
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.waitForURL(/oauth-test-callback\?code=/)
      const back = new URL(page.url())
      assert.is(back.searchParams.get('state'), 'st8')
      const token = await form('/oauth/token', {
        grant_type: 'authorization_code',
        code: back.searchParams.get('code')!,
        redirect_uri: redirect,
        client_id: registered.body.client_id,
        code_verifier: verifier,
      })
      assert.is(token.status, 200)
      assert.is(token.body.scope, 'delivery:read catalog:read')
      assert.equal(violations, [])
    } finally {
      await close()
    }
  })

  test('the OAuth tokens page lists the member’s tokens with their expiry and revokes one', async () => {
    const { page, violations, close } = await signedInPage(`${server.url}/console/#tokens`)
    try {
      await page.getByRole('heading', { name: 'OAuth tokens', level: 1 }).waitFor()
      const mine = page.getByRole('region', { name: 'Yours' })
      await mine.getByText('Claude Test').waitFor()
      assert.ok(await mine.getByText('OpenCode').isVisible())
      await reviewPage(page, 'oauth-tokens')
      await mine.getByRole('button', { name: /^Revoke OpenCode token/ }).click()
      await mine.getByText('revoked (member)').waitFor()
      const list = await api('GET', '/v1/me/oauth-tokens')
      assert.is(list.body.items.find((t: { clientId: string }) => t.clientId === 'opencode').status, 'revoked')
      assert.equal(violations, [])
    } finally {
      await close()
    }
  })

  test.run()
}
