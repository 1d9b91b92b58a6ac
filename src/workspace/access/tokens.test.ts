import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { bindPeer, PEER_ADDRESS_HEADER, peerAddress } from '../../core/peer-address.ts'
import { serve } from '../../serve.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/tokens')

test('tokens are issued once in plaintext, listed without values or hashes, and revocable', async () => {
  const s = await startTestServer()
  try {
    const res = await s.req('/tokens', {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { scope: 'collaborator', label: ' laptop ', ttlSeconds: 3600 },
    })
    assert.is(res.status, 201)
    const created = await res.json()
    assert.match(created.token, /^svc_tk_[A-Za-z0-9_-]{43}$/)
    assert.is(created.scope, 'collaborator')
    assert.is(created.label, 'laptop')
    assert.is(created.expiresAt - created.createdAt, 3_600_000)
    const who = await (await s.req('/whoami', { token: created.token })).json()
    assert.equal([who.actor.scope, who.actor.tokenId], ['collaborator', created.id])
    const listText = await (await s.req('/tokens', { hostToken: HOST_TOKEN })).text()
    assert.not.ok(listText.includes(created.token))
    assert.not.ok(listText.includes(who.actor.tokenHash))
    const [item] = JSON.parse(listText).items
    assert.equal(Object.keys(item).sort(), ['createdAt', 'expiresAt', 'id', 'label', 'lastUsedAt', 'scope'])
    assert.type(item.lastUsedAt, 'number')
    const db = readFileSync(join(s.dir, 'data', 'workspace-state.sqlite'))
    assert.not.ok(db.includes(created.token), 'the database holds no plaintext token')
    assert.is(statSync(join(s.dir, 'data', 'workspace-state.sqlite')).mode & 0o777, 0o600)
    assert.equal(await (await s.req(`/tokens/${created.id}`, { method: 'DELETE', hostToken: HOST_TOKEN })).json(), {
      ok: true,
    })
    assert.is((await s.req('/whoami', { token: created.token })).status, 401)
    const again = await s.req(`/tokens/${created.id}`, { method: 'DELETE', hostToken: HOST_TOKEN })
    assert.is(again.status, 404)
    assert.is((await again.json()).code, 'token_not_found')
    const bad = await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope: 'admin' } })
    assert.is(bad.status, 400)
    assert.is((await bad.json()).code, 'invalid_scope')
  } finally {
    await s.dispose()
  }
})

test('an owner bearer may use host routes; the host token is not a bearer', async () => {
  const s = await startTestServer()
  try {
    const owner = await (
      await s.req('/tokens', { method: 'POST', hostToken: HOST_TOKEN, json: { scope: 'owner' } })
    ).json()
    assert.is((await s.req('/approvals', { token: owner.token })).status, 200)
    assert.is((await s.req('/tokens', { token: HOST_TOKEN })).status, 401)
    assert.is((await s.req('/workspaces', { token: HOST_TOKEN })).status, 401)
  } finally {
    await s.dispose()
  }
})

test('repeated failures from one address are refused with 429 and Retry-After, other addresses are not', async () => {
  const s = await startTestServer({ authThrottle: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30 } })
  try {
    const from = (address: string, token: string) =>
      s.req('/workspaces', { token, headers: { [PEER_ADDRESS_HEADER]: address } })
    for (let i = 0; i < 3; i++) assert.is((await from('10.0.0.9', 'wrong-token')).status, 401)
    const locked = await from('10.0.0.9', CLIENT_TOKEN)
    assert.is(locked.status, 429)
    assert.is(locked.headers.get('retry-after'), '30')
    assert.is((await locked.json()).code, 'rate_limited')
    assert.is((await from('10.0.0.10', CLIENT_TOKEN)).status, 200)
    assert.is((await s.req('/health', { headers: { [PEER_ADDRESS_HEADER]: '10.0.0.9' } })).status, 200)
    s.clock.advance(31_000)
    assert.is((await from('10.0.0.9', CLIENT_TOKEN)).status, 200)
  } finally {
    await s.dispose()
  }
})

test('the listener supplies the real peer address and a client-sent header cannot override it', async () => {
  const listener = await serve({
    host: '127.0.0.1',
    port: 0,
    fetch: async (r, peer) => {
      bindPeer(r, peer)
      return new Response(peerAddress(r))
    },
  })
  try {
    const res = await fetch(`http://127.0.0.1:${listener.port}/`, { headers: { [PEER_ADDRESS_HEADER]: '203.0.113.7' } })
    const seen = await res.text()
    assert.not.ok(seen.includes('203.0.113.7'))
    assert.match(seen, /127\.0\.0\.1/)
  } finally {
    await listener.stop()
  }
})

test('CORS: configured origins only, preflights cached, others refused', async () => {
  const s = await startTestServer({ corsOrigins: ['https://app.example'] })
  try {
    const ok = await s.req('/workspaces', { token: CLIENT_TOKEN, headers: { origin: 'https://app.example' } })
    assert.is(ok.headers.get('access-control-allow-origin'), 'https://app.example')
    const pre = await s.req('/workspaces', {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    })
    assert.is(pre.status, 204)
    assert.ok(Number(pre.headers.get('access-control-max-age')) > 0)
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', /X-Service-Host-Token/)
    assert.match(pre.headers.get('access-control-allow-headers') ?? '', /Idempotency-Key/, 'the SDK sends it on writes')
    const other = await s.req('/workspaces', { token: CLIENT_TOKEN, headers: { origin: 'https://evil.example' } })
    assert.is(other.headers.get('access-control-allow-origin'), null)
    const refused = await s.req('/workspaces', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    })
    assert.is(refused.status, 403)
    assert.is(refused.headers.get('access-control-allow-origin'), null)
  } finally {
    await s.dispose()
  }
  const closed = await startTestServer()
  try {
    const res = await closed.req('/workspaces', { token: CLIENT_TOKEN, headers: { origin: 'https://app.example' } })
    assert.is(res.headers.get('access-control-allow-origin'), null)
  } finally {
    await closed.dispose()
  }
})

test.run()
