import { assert, suite } from '../../../tests/harness.ts'
import { CLIENT_TOKEN, HOST_TOKEN, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/discovery')

test('health needs no credential and the discovery routes answer a client token', async () => {
  const s = await startTestServer()
  try {
    assert.is((await s.req('/health')).status, 200)
    const workspaces = await (await s.req('/workspaces', { token: CLIENT_TOKEN })).json()
    assert.is(workspaces.items.length, 1)
    assert.match(workspaces.items[0].id, /^ws_[0-9a-f]{12}$/)
    assert.is(workspaces.activeId, workspaces.items[0].id)
    assert.equal(workspaces.workspaces, workspaces.items)
    const status = await (await s.req('/status', { token: CLIENT_TOKEN })).json()
    assert.is(status.ok, true)
    assert.equal(status.approval, { mode: 'auto', timeoutMs: 30000 })
    assert.is(status.workspace.id, s.wsId)
    const caps = await (await s.req('/capabilities', { token: CLIENT_TOKEN })).json()
    assert.equal(caps.tokens.scopes, ['owner', 'collaborator', 'viewer'])
    assert.is(caps.skills.write, true)
    assert.equal(caps.files.sessions, {
      read: true,
      write: true,
      maxBatchItems: 64,
      maxFileBytes: 5_000_000,
      maxSessions: 256,
    })
    assert.equal(caps.files.inbox, {
      enabled: true,
      write: true,
      path: '.opencode/service/inbox/',
      maxBytes: 250_000_000,
      requiresApproval: false,
    })
    assert.equal(caps.files.outbox, { enabled: true, path: '.opencode/service/outbox/' })
    const who = await (
      await s.req('/whoami', { token: CLIENT_TOKEN, headers: { 'x-service-client-id': 'desk-1' } })
    ).json()
    assert.is(who.actor.scope, 'collaborator')
    assert.is(who.actor.clientId, 'desk-1')
    assert.match(who.actor.tokenHash, /^[0-9a-f]{64}$/)
  } finally {
    await s.dispose()
  }
})

test('no discovery response carries a configured token value', async () => {
  const s = await startTestServer()
  try {
    for (const path of ['/status', '/capabilities', '/workspaces', '/whoami']) {
      const text = await (await s.req(path, { token: CLIENT_TOKEN })).text()
      assert.not.ok(text.includes(CLIENT_TOKEN), path)
      assert.not.ok(text.includes(HOST_TOKEN), path)
    }
  } finally {
    await s.dispose()
  }
})

test.run()
