/**
 * What stock OpenCode reads, over HTTP: the delivered set as OpenCode config, the capability URL
 * serving the skills and context without credentials, and the lifecycle that matters to a person
 * at a desktop: a dead credential still gets 200 (OpenCode would not start otherwise) and its
 * capability URL stops answering; unknown URLs are throttled per address.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { deviceTokens } from '../oauth/oauth-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/opencode-config', { timeoutMs: 60_000 })

const SKILL = (name: string, body = `Do ${name}.`) =>
  `---\nname: ${name}\ndescription: The ${name} skill\n---\n\n${body}\n`
const path = (url: string) => new URL(url).pathname + new URL(url).search

test('a member’s OpenCode config carries the delivered MCP entry, agent, command, context and skills, served by a capability URL without credentials', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'occ')
    const admin = org.admin.token
    const mk = async (type: string, title: string, input: Record<string, unknown>) => {
      const res = await t.client.post('/v1/config-objects', {
        token: admin,
        json: { type, sourceMode: 'cloud', title, input },
      })
      assert.is(res.status, 201, JSON.stringify(res.body))
      return res.body.item.id as string
    }
    const skill = (
      await t.client.post('/v1/skills', {
        token: admin,
        json: {
          skillMd: SKILL('ship'),
          files: [{ path: 'docs/steps.md', contentBase64: btoa('1. build\n2. ship\n'), executable: false }],
        },
      })
    ).body.item.id as string
    const plugin = (await t.client.post('/v1/plugins', { token: admin, json: { name: 'Kit' } })).body.item.id
    const objects = [
      await mk('mcp', 'Tracker', { normalizedPayload: { type: 'remote', url: 'https://mcp.example/tracker' } }),
      await mk('command', 'Release', { rawSourceText: '---\ndescription: Cut a release\n---\nCut release $ARGUMENTS' }),
      await mk('agent', 'Reviewer', {
        rawSourceText: '---\ndescription: Reviews changes\nmode: subagent\n---\nReview carefully.',
      }),
      await mk('context', 'House style', { normalizedPayload: { content: 'Prefer short functions.' } }),
      skill,
    ]
    for (const id of objects)
      await t.client.post(`/v1/plugins/${plugin}/config-objects`, { token: admin, json: { configObjectId: id } })
    await t.client.post(`/v1/plugins/${plugin}/assignments`, { token: admin, json: { orgWide: true } })

    const res = await t.client.get('/v1/me/opencode-config', { token: org.member.token })
    assert.is(res.status, 200)
    assert.is(res.headers.get('cache-control'), 'no-store')
    const config = res.body
    assert.equal(config.mcp, { tracker: { type: 'remote', url: 'https://mcp.example/tracker' } })
    assert.equal(config.command, { release: { description: 'Cut a release', template: 'Cut release $ARGUMENTS' } })
    assert.equal(config.agent, {
      reviewer: { description: 'Reviews changes', mode: 'subagent', prompt: 'Review carefully.' },
    })
    assert.is(config.instructions.length, 1)
    assert.is(config.skills.urls.length, 1)
    const base: string = config.skills.urls[0]
    assert.match(base, /\/d\/dcap_[A-Za-z0-9_-]{20,}\/$/)
    assert.ok(config.instructions[0].startsWith(base), 'context is served under the capability URL')

    // Without credentials: the index, each file, the context.
    const index = await t.client.get(path(`${base}index.json`))
    assert.is(index.status, 200)
    assert.equal(index.body.skills.length, 1)
    assert.equal([index.body.skills[0].name, index.body.skills[0].files], ['ship', ['SKILL.md', 'docs/steps.md']])
    assert.match(index.body.skills[0].version, /^[0-9a-f]{64}$/)
    const steps = await t.app.fetch(new Request(`http://cp${path(`${base}ship/docs/steps.md`)}`))
    assert.equal([steps.status, await steps.text()], [200, '1. build\n2. ship\n'])
    const md = await t.app.fetch(new Request(`http://cp${path(`${base}ship/SKILL.md`)}`))
    assert.ok((await md.text()).includes('Do ship.'))
    const context = await t.app.fetch(new Request(`http://cp${path(config.instructions[0])}`))
    assert.equal([context.status, await context.text()], [200, 'Prefer short functions.\n'])
    assert.is((await t.app.fetch(new Request(`http://cp${path(`${base}ship/../../etc/passwd`)}`))).status, 404)
    assert.is((await t.app.fetch(new Request(`http://cp${path(`${base}other/SKILL.md`)}`))).status, 404)

    // The same URL on the next start (OpenCode's cache stays valid); a new version changes `version`.
    const again = await t.client.get('/v1/me/opencode-config', { token: org.member.token })
    assert.equal(again.body.skills.urls, [base])
    await t.client.post(`/v1/config-objects/${skill}/versions`, {
      token: admin,
      json: { input: { rawSourceText: SKILL('ship', 'Ship it twice.') } },
    })
    const after = await t.client.get(path(`${base}index.json`))
    assert.not.equal(after.body.skills[0].version, index.body.skills[0].version)

    // An API key's URL dies with the key; a session's with the sign-out; every URL with the member.
    const keyConfig = await t.client.get('/v1/me/opencode-config', { apiKey: org.adminKey.key })
    const keyBase: string = keyConfig.body.skills.urls[0]
    assert.not.equal(keyBase, base, 'one URL per credential')
    assert.is((await t.client.get(path(`${keyBase}index.json`))).status, 200)
    assert.is((await t.client.delete(`/v1/api-keys/${org.adminKey.id}`, { token: org.owner.token })).status, 204)
    assert.is((await t.client.get(path(`${keyBase}index.json`))).status, 404)
    const dead = await t.client.get('/v1/me/opencode-config', { apiKey: org.adminKey.key })
    assert.is(dead.status, 200, 'never a 4xx for a dead credential')

    assert.is((await t.client.delete(`/v1/members/${org.member.memberId}`, { token: org.owner.token })).status, 204)
    assert.is((await t.client.get(path(`${base}index.json`))).status, 404, 'the removed member’s URL is gone')
    const removed = await t.client.get('/v1/me/opencode-config', { token: org.member.token })
    assert.is(removed.status, 200)
    assert.equal(Object.keys(removed.body), ['instructions'], 'nothing of the organization is delivered')
    const notice = await t.app.fetch(new Request(`http://cp${path(removed.body.instructions[0])}`))
    assert.ok((await notice.text()).includes('no longer a member'))
  } finally {
    await t.close()
  }
})

test('an unknown token gets a config that delivers nothing and says how to sign in again or log out; unknown capability URLs are throttled per address', async () => {
  const t = await startTestControlPlane({ trustProxy: true })
  try {
    const res = await t.client.get('/v1/me/opencode-config', { token: 'oat_not-a-real-token' })
    assert.is(res.status, 200)
    assert.equal(Object.keys(res.body), ['instructions'])
    const notice = await t.app.fetch(new Request(`http://cp${path(res.body.instructions[0])}`))
    assert.is(notice.status, 200)
    assert.is(notice.headers.get('content-type'), 'text/markdown; charset=utf-8')
    const text = await notice.text()
    assert.ok(text.includes('opencode auth login http://cp'), text)
    assert.ok(text.includes('opencode auth logout http://cp'), text)
    const none = await t.client.get('/v1/me/opencode-config')
    assert.is(none.status, 200, 'no credential at all: the same answer')

    // 60 unknown capability URLs a minute from one address, then 429 until the window ends.
    const miss = (n: number) =>
      t.app.fetch(
        new Request(`http://cp/d/dcap_${'x'.repeat(40)}${n}/index.json`, {
          headers: { 'x-forwarded-for': '203.0.113.9' },
        }),
      )
    for (let i = 0; i < 60; i++) assert.is((await miss(i)).status, 404)
    const limited = await miss(61)
    assert.is(limited.status, 429)
    assert.ok(Number(limited.headers.get('retry-after')) > 0)
    t.clock.advance(61_000)
    assert.is((await miss(62)).status, 404, 'a new window')
  } finally {
    await t.close()
  }
})

test('OpenCode signs in with the device grant the well-known document names; its OAuth token reads the set, and revoking it ends the capability URL', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'occ-oauth')
    const wellKnown = await t.client.get('/.well-known/opencode')
    assert.is(wellKnown.status, 200)
    assert.is(wellKnown.headers.get('cache-control'), 'public, max-age=300')
    assert.equal(wellKnown.body.auth.command.slice(0, 2), ['sh', '-c'])
    assert.is(wellKnown.body.auth.env, 'SERVICE_ORG_TOKEN')
    assert.ok(wellKnown.body.auth.command.includes('opencode'), 'the built-in opencode client')
    assert.match(wellKnown.body.remote_config.url, /\/v1\/me\/opencode-config$/)
    assert.equal(wellKnown.body.remote_config.headers, { Authorization: 'Bearer {env:SERVICE_ORG_TOKEN}' })

    const skill = (await t.client.post('/v1/skills', { token: org.admin.token, json: { skillMd: SKILL('lint') } })).body
      .item.id
    const hub = (await t.client.post('/v1/skill-hubs', { token: org.admin.token, json: { name: 'Lint' } })).body.item.id
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: org.admin.token, json: { skillId: skill } })
    await t.client.post(`/v1/skill-hubs/${hub}/assignments`, {
      token: org.admin.token,
      json: { memberId: org.member.memberId },
    })
    const tokens = await deviceTokens(t.client, org.member.token)
    const delivery = await t.client.get('/v1/me/delivery', { token: tokens.access_token })
    assert.is(delivery.status, 200)
    assert.equal(
      delivery.body.items.map((i: { name: string }) => i.name),
      ['lint'],
    )
    const config = await t.client.get('/v1/me/opencode-config', { token: tokens.access_token })
    const base: string = config.body.skills.urls[0]
    assert.is((await t.client.get(path(`${base}index.json`))).status, 200)

    const mine = await t.client.get('/v1/me/oauth-tokens', { token: org.member.token })
    const grant = mine.body.items[0].id
    assert.is((await t.client.delete(`/v1/me/oauth-tokens/${grant}`, { token: org.member.token })).status, 204)
    assert.is((await t.client.get(path(`${base}index.json`))).status, 404, 'revoked: the URL is gone')
    const after = await t.client.get('/v1/me/opencode-config', { token: tokens.access_token })
    assert.is(after.status, 200)
    assert.equal(Object.keys(after.body), ['instructions'])
  } finally {
    await t.close()
  }
})

test.run()
