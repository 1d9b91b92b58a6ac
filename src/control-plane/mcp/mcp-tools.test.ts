/**
 * The MCP endpoint's tools through the SDK's own client over real HTTP: the same grants as the
 * HTTP API (a plain member, another organization's ids, a removed member), write tools audited
 * with origin `mcp`, and sessions bound to the credential that opened them.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { connectClient, credentialHeaders, startMcpTestPlane, toolJson } from './mcp-test-kit.ts'

const test = suite('control-plane/mcp/tools', { timeoutMs: 60_000 })

const skillMd = (name: string, body = 'Do the thing.') =>
  `---\nname: ${name}\ndescription: The ${name} skill for tests\n---\n\n${body}\n`

test('an API key lists the tools and finds and reads a skill it can see, with its resolved files', async () => {
  const t = await startMcpTestPlane()
  try {
    const created = await t.plane.client.post('/v1/skills', {
      token: t.org.owner.token,
      json: {
        skillMd: skillMd('release-notes'),
        files: [{ path: 'scripts/run.sh', content: 'echo hi\n', executable: true }],
      },
    })
    assert.is(created.status, 201)
    const skillId: string = created.body.item.id
    const { client } = await connectClient(t.mcpUrl, { apiKey: t.org.ownerKey.key })
    try {
      const tools = (await client.listTools()).tools.map((tool) => tool.name).sort()
      assert.equal(tools, ['create_skill', 'get_object', 'list_organizations', 'publish_version', 'search'])
      const found = toolJson(await client.callTool({ name: 'search', arguments: { query: 'release', type: 'skill' } }))
      const items = found.items as Array<{ id: string; name: string; kind: string }>
      assert.equal(
        items.map((i) => [i.kind, i.id, i.name]),
        [['config_object', skillId, 'release-notes']],
      )
      const read = toolJson(await client.callTool({ name: 'get_object', arguments: { id: skillId } }))
      const resolved = read.resolved as { files: Array<{ path: string; content: string; executable: boolean }> }
      assert.equal(
        resolved.files.map((f) => f.path),
        ['.opencode/skills/release-notes/SKILL.md', '.opencode/skills/release-notes/scripts/run.sh'],
      )
      assert.is(resolved.files[0]!.content, skillMd('release-notes'))
      assert.ok(resolved.files[1]!.executable)
      const orgs = toolJson(await client.callTool({ name: 'list_organizations', arguments: {} }))
      assert.equal(orgs.items, [{ id: t.org.orgId, name: 'Org mcp', role: 'owner', current: true }])
    } finally {
      await client.close()
    }
  } finally {
    await t.close()
  }
})

test('a plain member sees only what is shared with them, and no other organization by id', async () => {
  const t = await startMcpTestPlane()
  try {
    const hidden = await t.plane.client.post('/v1/skills', {
      token: t.org.owner.token,
      json: { skillMd: skillMd('owner-only') },
    })
    const hiddenId: string = hidden.body.item.id
    const shared = await t.plane.client.post('/v1/skills', {
      token: t.org.owner.token,
      json: { skillMd: skillMd('team-shared') },
    })
    const sharedId: string = shared.body.item.id
    const grant = await t.plane.client.post(`/v1/config-objects/${sharedId}/access`, {
      token: t.org.owner.token,
      json: { memberId: t.org.member.memberId, role: 'viewer' },
    })
    assert.is(grant.status, 201, JSON.stringify(grant.body))
    // Another organization, with its own skill.
    const { buildFixtureOrg } = await import('../testing/org-fixture.ts')
    const other = await buildFixtureOrg(t.plane.client, 'other')
    const foreign = await t.plane.client.post('/v1/skills', {
      token: other.owner.token,
      json: { skillMd: skillMd('foreign-skill') },
    })
    const foreignId: string = foreign.body.item.id

    const { client } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    try {
      const all = toolJson(await client.callTool({ name: 'search', arguments: {} }))
      assert.equal(
        (all.items as Array<{ id: string }>).map((i) => i.id),
        [sharedId],
      )
      for (const id of [hiddenId, foreignId]) {
        const denied = await client.callTool({ name: 'get_object', arguments: { id } })
        assert.ok(denied.isError, `${id} must not be readable`)
        assert.is((toolJson(denied).error as { code: string }).code, 'config_object_not_found')
      }
      // The HTTP API answers the same for the same ids.
      for (const id of [hiddenId, foreignId])
        assert.is((await t.plane.client.get(`/v1/config-objects/${id}`, { token: t.org.member.token })).status, 404)
      const orgs = toolJson(await client.callTool({ name: 'list_organizations', arguments: {} }))
      assert.equal(
        (orgs.items as Array<{ id: string; role: string }>).map((o) => [o.id, o.role]),
        [[t.org.orgId, 'member']],
      )
    } finally {
      await client.close()
    }
  } finally {
    await t.close()
  }
})

test('write tools go through the same checks as HTTP and are audited with origin mcp', async () => {
  const t = await startMcpTestPlane()
  try {
    const { client } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    try {
      const created = toolJson(
        await client.callTool({ name: 'create_skill', arguments: { skillMd: skillMd('from-agent') } }),
      )
      const skill = created.skill as { id: string; versionId: string }
      const published = toolJson(
        await client.callTool({
          name: 'publish_version',
          arguments: {
            objectId: skill.id,
            baseVersionId: skill.versionId,
            rawSourceText: skillMd('from-agent', 'Do it better.'),
          },
        }),
      )
      const version = published.version as { id: string; number: number }
      assert.is(version.number, 2)
      // A stale base is refused like over HTTP, naming the latest version.
      const stale = await client.callTool({
        name: 'publish_version',
        arguments: {
          objectId: skill.id,
          baseVersionId: skill.versionId,
          rawSourceText: skillMd('from-agent', 'Again.'),
        },
      })
      assert.ok(stale.isError)
      const error = toolJson(stale).error as { code: string; details: { latestVersionId: string } }
      assert.is(error.code, 'version_conflict')
      assert.is(error.details.latestVersionId, version.id)
      // The owner's skill is not the member's to edit.
      const ownerSkill = await t.plane.client.post('/v1/skills', {
        token: t.org.owner.token,
        json: { skillMd: skillMd('owners') },
      })
      const refused = await client.callTool({
        name: 'publish_version',
        arguments: {
          objectId: ownerSkill.body.item.id,
          baseVersionId: ownerSkill.body.item.versionId,
          rawSourceText: skillMd('owners', 'Mine now.'),
        },
      })
      assert.ok(refused.isError)
      assert.is((toolJson(refused).error as { code: string }).code, 'config_object_not_found')
      // Invalid arguments are a tool error naming the field.
      const invalid = await client.callTool({ name: 'create_skill', arguments: { skillMd: 'no frontmatter' } })
      assert.ok(invalid.isError)
    } finally {
      await client.close()
    }
    const audit = await t.plane.client.get('/v1/audit-events', { token: t.org.owner.token })
    const mine = (audit.body.items as Array<{ action: string; origin: string; actor: { memberId: string } }>).filter(
      (e) => e.actor.memberId === t.org.member.memberId && e.action.startsWith('config_object.'),
    )
    assert.equal(
      mine.map((e) => [e.action, e.origin]),
      [
        ['config_object.version_added', 'mcp'],
        ['config_object.created', 'mcp'],
      ],
    )
    const ownerCreated = (
      audit.body.items as Array<{ action: string; origin: string; actor: { memberId: string } }>
    ).find((e) => e.actor.memberId === t.org.owner.memberId && e.action === 'config_object.created')
    assert.is(ownerCreated?.origin, 'api')
  } finally {
    await t.close()
  }
})

test('a removed member is refused on the next call; a session id is useless with another credential', async () => {
  const t = await startMcpTestPlane()
  try {
    const { client: memberClient, transport } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    const sessionId = transport.sessionId!
    assert.ok(sessionId && sessionId.length >= 32)
    // The admin's credential cannot use the member's session.
    const hijack = await fetch(t.mcpUrl, {
      method: 'POST',
      headers: {
        ...credentialHeaders({ apiKey: t.org.adminKey.key }),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    })
    assert.is(hijack.status, 404)
    // Without a credential: 401 before anything else.
    const anonymous = await fetch(t.mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    })
    assert.is(anonymous.status, 401)
    assert.ok((await memberClient.listTools()).tools.length > 0)
    // An event stream the member holds open (opened by hand, so the test can watch it end).
    const auth = { authorization: `Bearer ${t.org.member.token}` }
    const init = await fetch(t.mcpUrl, {
      method: 'POST',
      headers: { ...auth, ...JSON_HEADERS },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    })
    await init.body?.cancel()
    const stream = await fetch(t.mcpUrl, {
      headers: {
        ...auth,
        accept: 'text/event-stream',
        'mcp-session-id': init.headers.get('mcp-session-id')!,
        'mcp-protocol-version': '2025-11-25',
      },
    })
    assert.is(stream.status, 200)
    const reader = stream.body!.getReader()
    const removed = await t.plane.client.delete(`/v1/members/${t.org.member.memberId}`, { token: t.org.owner.token })
    assert.ok(removed.status === 200 || removed.status === 204, `remove: ${removed.status}`)
    let refused: unknown = null
    try {
      await memberClient.callTool({ name: 'search', arguments: {} })
    } catch (error) {
      refused = error
    }
    assert.ok(refused, 'a removed member must not get an answer')
    // The open stream ends too: the removal in the change feed makes the session check its member.
    const deadline = Date.now() + 5_000
    let ended = false
    while (!ended && Date.now() < deadline) {
      const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 500))])
      if (next?.done) ended = true
    }
    assert.ok(ended, "the removed member's event stream is closed")
    await memberClient.close()
  } finally {
    await t.close()
  }
})

test('sessions are capped per credential (the least recently used closes) and idle ones end', async () => {
  const t = await startMcpTestPlane({ file: { mcp: { maxSessionsPerCredential: 2, idleSessionSeconds: 60 } } })
  try {
    // Sessions opened by hand: the SDK client also opens an event stream at a moment of its choosing.
    const key = t.org.ownerKey.key
    const a = await rawInitialize(t.mcpUrl, key)
    const b = await rawInitialize(t.mcpUrl, key)
    assert.is((await rawCall(t.mcpUrl, key, a, 'tools/list')).status, 200)
    const c = await rawInitialize(t.mcpUrl, key)
    // b was used least recently: it is gone, a and c work.
    assert.is((await rawCall(t.mcpUrl, key, b, 'tools/list')).status, 404, 'the least recently used session closed')
    assert.is((await rawCall(t.mcpUrl, key, a, 'tools/list')).status, 200)
    assert.is((await rawCall(t.mcpUrl, key, c, 'tools/list')).status, 200)
    // Another credential has its own allowance, and a client holding its event stream open stays.
    const other = await connectClient(t.mcpUrl, { apiKey: t.org.adminKey.key })
    await other.client.listTools()
    // The client opens its stream right after initializing, without waiting for it; give it a moment.
    await new Promise((r) => setTimeout(r, 300))
    // A session whose client keeps no event stream open ends once idle.
    t.plane.clock.advance(61_000)
    assert.is((await rawCall(t.mcpUrl, key, a, 'tools/list')).status, 404, 'an idle session is closed')
    assert.ok((await other.client.listTools()).tools.length > 0, 'a session with an open stream is not idle')
    await other.client.close()
  } finally {
    await t.close()
  }
})

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

/** Opens a session by hand (no event stream, unlike the SDK client); answers its id. */
async function rawInitialize(mcpUrl: string, apiKey: string): Promise<string> {
  const response = await fetch(mcpUrl, {
    method: 'POST',
    headers: { ...credentialHeaders({ apiKey }), ...JSON_HEADERS },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  })
  assert.is(response.status, 200)
  await response.body?.cancel()
  return response.headers.get('mcp-session-id')!
}

/** One JSON-RPC request on a session opened by {@link rawInitialize}. */
function rawCall(mcpUrl: string, apiKey: string, sessionId: string, method: string): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: {
      ...credentialHeaders({ apiKey }),
      ...JSON_HEADERS,
      'mcp-session-id': sessionId,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method }),
  })
}

test('a body over the limit is refused with 413 before it is parsed', async () => {
  const t = await startMcpTestPlane({ file: { mcp: { maxBodyBytes: 1024 } } })
  try {
    const response = await fetch(t.mcpUrl, {
      method: 'POST',
      headers: {
        ...credentialHeaders({ apiKey: t.org.ownerKey.key }),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { pad: 'x'.repeat(4096) } }),
    })
    assert.is(response.status, 413)
  } finally {
    await t.close()
  }
})

test.run()
