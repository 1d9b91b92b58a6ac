/**
 * Single sign-on in a browser against a real OpenID provider: `oidc-provider` (the certified
 * implementation) on loopback with a confidential test client, its own login and consent pages,
 * and the console. Covers the first sign-in (just-in-time membership with the default role and
 * team), the device-authorization approval after SSO, and signing-key rotation at the provider.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Browser, Page } from 'playwright-core'
import { assert, startChild, suite, tempDir, type ChildServer } from '../harness.ts'
import { browserAvailable, cspViolations, launchBrowser } from './browser-kit.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const CLIENT_ID = 'service-console'
const CLIENT_SECRET = 'a-test-client-secret-of-some-length'

/** A private RSA signing key as a JWK, with a key id. */
async function signingKey(kid: string): Promise<JsonWebKey> {
  const pair = (await crypto.subtle.generateKey(
    { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
    true,
    ['sign', 'verify'],
  )) as CryptoKeyPair
  const jwk = await crypto.subtle.exportKey('jwk', pair.privateKey)
  return { ...jwk, kid, alg: 'RS256', use: 'sig' } as JsonWebKey
}

if (browserAvailable()) {
  const test = suite('console in a browser: single sign-on with a real OpenID provider', { timeoutMs: 240_000 })
  const dir = tempDir('svc-browser-sso-')
  let server: ChildServer
  let browser: { browser: Browser; close(): Promise<void> }
  let session = ''
  let teamId = ''
  let issuer = ''
  let handler: (req: IncomingMessage, res: ServerResponse) => void = () => {}
  let jwksRequests = 0
  const idp = createServer((req, res) => {
    if (req.url?.startsWith('/jwks')) jwksRequests++
    handler(req, res)
  })

  const api = async (method: string, path: string, body?: unknown, token = session) => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: response.status, body: await response.json().catch(() => null) }
  }

  /** Runs the provider with a fresh signing key (a rotation: the old key leaves its JWKS). */
  const provide = async (kid: string) => {
    const { default: Provider } = await import('oidc-provider')
    const provider = new Provider(issuer, {
      clients: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [`${server.url}/v1/sso/acme/callback`],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_basic',
        },
      ],
      jwks: { keys: [await signingKey(kid)] },
      // Whatever login is typed on the provider's page is the account: its subject and email.
      findAccount: async (_ctx: unknown, id: string) => ({
        accountId: id,
        claims: async () => ({ sub: `sub:${id}`, email: id, email_verified: true, name: id.split('@')[0] }),
      }),
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
      conformIdTokenClaims: false,
      cookies: { keys: ['a-cookie-signing-key-for-tests'] },
    })
    handler = provider.callback() as typeof handler
  }

  /** From the console's sign-in form through the provider's login and consent, back signed in. */
  const signInThroughProvider = async (page: Page, email: string) => {
    await page.getByLabel('Email').first().fill(email)
    await page.getByLabel('Email').first().press('Tab')
    await page.getByRole('link', { name: 'Sign in with Acme IdP' }).click()
    await page.locator('input[name=login]').waitFor()
    await page.locator('input[name=login]').fill(email)
    await page.locator('input[name=password]').fill('anything')
    await page.getByRole('button', { name: 'Sign-in' }).click()
    await page.getByRole('button', { name: 'Continue' }).click()
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
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve))
    issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`
    await provide('key-one')
    browser = await launchBrowser()
    const signed = await api('POST', '/v1/auth/sign-up', {
      email: 'owner@acme.test',
      password: 'a long password',
      name: 'Owner',
    })
    session = signed.body.session.token
    assert.is((await api('POST', '/v1/orgs', { name: 'Acme' })).status, 201)
    teamId = (await api('POST', '/v1/teams', { name: 'Engineering' })).body.item.id
    const saved = await api('PUT', '/v1/org/sso', {
      slug: 'acme',
      displayName: 'Acme IdP',
      issuer,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      allowedDomains: ['people.acme.test'],
      defaultRole: 'member',
      defaultTeamId: teamId,
    })
    assert.is(saved.status, 201, JSON.stringify(saved.body))
    assert.is(saved.body.item.redirectUri, `${server.url}/v1/sso/acme/callback`)
  })

  test.after(async () => {
    await browser?.close()
    await server?.stop()
    await new Promise<void>((resolve) => idp.close(() => resolve()))
    dir.remove()
  })

  test('a person signs in through the provider’s login page, joins with the default role and team, and approves a device sign-in', async () => {
    const started = await fetch(`${server.url}/oauth/device_authorization`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: 'opencode' }).toString(),
    }).then((r) => r.json())
    const context = await browser.browser.newContext()
    const page = await context.newPage()
    const violations = cspViolations(page)
    try {
      // The program sends the person to the approval page; they are not signed in yet.
      await page.goto(started.verification_uri_complete)
      await signInThroughProvider(page, 'carol@people.acme.test')
      await page.getByRole('button', { name: 'Approve' }).click()
      await page.getByText('Approved: OpenCode is signed in to Acme').waitFor()
      const token = await fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
          device_code: started.device_code,
          client_id: 'opencode',
        }).toString(),
      })
      assert.is(token.status, 200)
      const members = await api('GET', '/v1/members')
      const carol = members.body.items.find((m: { email?: string; user?: { email: string } }) =>
        JSON.stringify(m).includes('carol@people.acme.test'),
      )
      assert.ok(carol, 'carol became a member')
      assert.is(carol.role, 'member')
      const team = await api('GET', `/v1/teams/${teamId}/members`)
      assert.ok(JSON.stringify(team.body).includes(carol.id), 'in the default team')
      // The console holds a session the provider signed in.
      const stored = await page.evaluate(() => sessionStorage.getItem('service-console.control-plane-session'))
      assert.ok(stored?.startsWith('sst_'))
      assert.equal(violations, [])
    } finally {
      await context.close()
    }
  })

  test('after the provider rotates its signing key, the next sign-in refetches the JWKS and succeeds', async () => {
    const before = jwksRequests
    assert.ok(before >= 1, 'the key set was fetched for the first sign-in')
    await provide('key-two')
    const context = await browser.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${server.url}/console/`)
      await signInThroughProvider(page, 'dave@people.acme.test')
      await page.getByText('dave@people.acme.test · member').waitFor()
      assert.is(jwksRequests, before + 1, 'one refetch for the unknown key id')
    } finally {
      await context.close()
    }
  })

  test('an email outside the connection’s domains comes back to the console with the reason', async () => {
    const context = await browser.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${server.url}/console/`)
      // The console offers SSO by domain; this person uses the provider directly with another email.
      await page.goto(`${server.url}/v1/sso/acme/start`)
      await page.locator('input[name=login]').fill('mallory@elsewhere.test')
      await page.locator('input[name=password]').fill('anything')
      await page.getByRole('button', { name: 'Sign-in' }).click()
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByText('not admitted by this organization').waitFor()
      assert.is(await page.evaluate(() => sessionStorage.getItem('service-console.control-plane-session')), null)
    } finally {
      await context.close()
    }
  })

  test('the owner links their account from the console, then requires SSO; their password session ends', async () => {
    const context = await browser.browser.newContext()
    const page = await context.newPage()
    const violations = cspViolations(page)
    try {
      await page.goto(`${server.url}/console/`)
      await page.evaluate((token) => sessionStorage.setItem('service-console.control-plane-session', token), session)
      await page.goto(`${server.url}/console/#orgs`)
      await page.reload()
      await page.getByRole('button', { name: 'Link with single sign-on' }).click()
      await page.locator('input[name=login]').fill('owner@acme.test')
      await page.locator('input[name=password]').fill('anything')
      await page.getByRole('button', { name: 'Sign-in' }).click()
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByText('owner@acme.test · owner').waitFor()
      const ssoSession = await page.evaluate(() => sessionStorage.getItem('service-console.control-plane-session'))
      assert.ok(ssoSession && ssoSession !== session, 'a new session, signed in by the provider')
      const policy = {
        waysIn: { invitation: true, ssoJustInTime: true, scim: true },
        allowedDomains: [],
        requireSso: true,
      }
      const unproven = await api('PUT', '/v1/org/admission-policy', { ...policy, expectedVersion: 0 })
      assert.is(unproven.body.code, 'sso_not_proven')
      const on = await api('PUT', '/v1/org/admission-policy', { ...policy, expectedVersion: 0 }, ssoSession!)
      assert.is(on.status, 200, JSON.stringify(on.body))
      assert.is((await api('GET', '/v1/me')).status, 401, 'the password session ended')
      session = ssoSession!
      const resolved = await api('GET', '/v1/sso/resolve?email=someone%40people.acme.test')
      assert.is(resolved.body.passwordAllowed, false)
      assert.equal(violations, [])
    } finally {
      await context.close()
    }
  })

  test.run()
}
