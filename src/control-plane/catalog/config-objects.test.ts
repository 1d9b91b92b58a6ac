import { createHash } from 'node:crypto'
/**
 * Config objects through the API: creation and history, concurrent editors, the resolved form of
 * every type against fixtures, write-time validation and the lifecycle. Every response is
 * checked against the contract by the test client.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane, type TestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/config-objects', { timeoutMs: 60_000 })
const FIXTURES = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../fixtures/config-objects')

const SKILL = '---\nname: hello-world\ndescription: Greets people\n---\n\nSay hello.\n'

async function world(fn: (t: TestControlPlane, org: FixtureOrg) => Promise<void>) {
  const t = await startTestControlPlane()
  try {
    await fn(t, await buildFixtureOrg(t.client, 'co'))
  } finally {
    await t.close()
  }
}

async function create(t: TestControlPlane, token: string, body: Record<string, unknown>) {
  const res = await t.client.post('/v1/config-objects', { token, json: { sourceMode: 'cloud', ...body } })
  assert.is(res.status, 201, JSON.stringify(res.body))
  return res.body.item
}

test('an object is created with version 1, versions append, and history keeps every version unchanged', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    const item = await create(t, token, { type: 'skill', title: 'Hello', input: { rawSourceText: SKILL } })
    assert.is(item.status, 'active')
    assert.is(item.name, 'hello-world')
    assert.is(item.versionCount, 1)
    assert.is(item.latestVersion.number, 1)
    assert.is(item.createdByMemberId, org.member.memberId)
    const stored = await t.client.get(`/v1/config-objects/${item.id}`, { token })
    assert.equal(stored.body.item, item, 'the create answers the object exactly as it is stored')
    const v1 = item.latestVersion.id
    const v2 = await t.client.post(`/v1/config-objects/${item.id}/versions`, {
      token,
      json: {
        input: { rawSourceText: SKILL.replace('Say hello.', 'Say hello twice.') },
        baseVersionId: v1,
        reason: 'louder',
      },
    })
    assert.is(v2.status, 201)
    assert.is(v2.body.item.number, 2)
    assert.is(v2.body.item.sourceRevisionRef, 'louder')
    const latest = await t.client.get(`/v1/config-objects/${item.id}/versions/latest`, { token })
    assert.is(latest.body.item.id, v2.body.item.id)
    const first = await t.client.get(`/v1/config-objects/${item.id}/versions/${v1}`, { token })
    assert.is(first.body.item.rawSourceText, SKILL, 'version 1 is unchanged')
    const history = await t.client.get(`/v1/config-objects/${item.id}/versions?limit=1`, { token })
    assert.equal(
      history.body.items.map((v: { number: number }) => v.number),
      [2],
    )
    const older = await t.client.get(
      `/v1/config-objects/${item.id}/versions?limit=1&cursor=${history.body.nextCursor}`,
      { token },
    )
    assert.equal(
      older.body.items.map((v: { number: number }) => v.number),
      [1],
    )
    assert.is(older.body.nextCursor, null)
    const detail = await t.client.get(`/v1/config-objects/${item.id}`, { token })
    assert.is(detail.body.item.versionCount, 2)
    assert.is(detail.body.item.latestVersion.id, v2.body.item.id)
    assert.not.ok('normalizedPayload' in detail.body.item.latestVersion, 'the detail carries no payload')
    const v = v2.body.item
    assert.equal(
      detail.body.item.latestVersion,
      {
        id: v.id,
        number: v.number,
        createdVia: v.createdVia,
        createdByMemberId: v.createdByMemberId,
        sourceRevisionRef: 'louder',
        createdAt: v.createdAt,
      },
      'the summary matches the latest version',
    )
    const missing = await t.client.get(`/v1/config-objects/${item.id}/versions/${item.id.replace('cob_', 'cov_')}`, {
      token,
    })
    assert.is(missing.status, 404)
    assert.is(missing.body.code, 'config_object_version_not_found')
  })
})

test('two editors appending on the same base version: exactly one 201 and one 409, and nothing is lost', async () => {
  await world(async (t, org) => {
    const item = await create(t, org.owner.token, { type: 'context', title: 'Notes', input: { rawSourceText: 'base' } })
    const base = item.latestVersion.id
    for (let round = 0; round < 5; round++) {
      const current = (await t.client.get(`/v1/config-objects/${item.id}/versions/latest`, { token: org.owner.token }))
        .body.item.id
      const [a, b] = await Promise.all([
        t.client.post(`/v1/config-objects/${item.id}/versions`, {
          token: org.owner.token,
          json: { input: { rawSourceText: `a${round}` }, baseVersionId: current },
        }),
        t.client.post(`/v1/config-objects/${item.id}/versions`, {
          apiKey: org.adminKey.key,
          json: { input: { rawSourceText: `b${round}` }, baseVersionId: current },
        }),
      ])
      assert.equal([a.status, b.status].sort(), [201, 409])
      const loser = a.status === 409 ? a : b
      assert.is(loser.body.code, 'version_conflict')
      assert.is(loser.body.details.latestVersionId, (a.status === 201 ? a : b).body.item.id)
    }
    const stale = await t.client.post(`/v1/config-objects/${item.id}/versions`, {
      token: org.owner.token,
      json: { input: { rawSourceText: 'late' }, baseVersionId: base },
    })
    assert.is(stale.status, 409)
    const history = await t.client.get(`/v1/config-objects/${item.id}/versions?limit=100`, { token: org.owner.token })
    assert.equal(
      history.body.items.map((v: { number: number }) => v.number),
      [6, 5, 4, 3, 2, 1],
      'numbers are contiguous: no version overwritten or skipped',
    )
  })
})

test('the resolved form of every type matches its fixture', async () => {
  await world(async (t, org) => {
    const cases = JSON.parse(readFileSync(join(FIXTURES, 'cases.json'), 'utf8')) as Array<{
      type: string
      title: string
      source: string
    }>
    assert.is(new Set(cases.map((c) => c.type)).size, 8, 'every type has a fixture')
    for (const c of cases) {
      const item = await create(t, org.member.token, {
        type: c.type,
        title: c.title,
        input: { rawSourceText: readFileSync(join(FIXTURES, c.source), 'utf8') },
      })
      const res = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token: org.member.token })
      assert.is(res.status, 200)
      const { configObjectId, version, ...resolved } = res.body.item
      assert.is(configObjectId, item.id)
      assert.is(version.id, item.latestVersion.id)
      const expectedPath = join(FIXTURES, c.type, 'resolved.json')
      if (process.env.UPDATE_FIXTURES === '1') writeFileSync(expectedPath, `${JSON.stringify(resolved, null, 2)}\n`)
      assert.equal(resolved, JSON.parse(readFileSync(expectedPath, 'utf8')), `${c.type} resolved form`)
    }
  })
})

test('a skill given as a normalized payload installs the same SKILL.md a runtime would parse back', async () => {
  await world(async (t, org) => {
    const item = await create(t, org.member.token, {
      type: 'skill',
      title: 'x',
      input: {
        normalizedPayload: {
          name: 'csv-helper',
          description: 'Reads: CSV files',
          body: 'Use `csvkit`.\n',
          metadata: { license: 'MIT' },
        },
      },
    })
    const res = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token: org.member.token })
    const content = '---\nname: csv-helper\ndescription: "Reads: CSV files"\nlicense: MIT\n---\n\nUse `csvkit`.\n'
    assert.equal(res.body.item.files, [
      {
        path: '.opencode/skills/csv-helper/SKILL.md',
        content,
        encoding: 'utf8',
        executable: false,
        sha256: createHash('sha256').update(content).digest('hex'),
      },
    ])
    const again = await create(t, org.member.token, {
      type: 'skill',
      title: 'y',
      input: { rawSourceText: res.body.item.files[0].content },
    })
    const reparsed = await t.client.get(`/v1/config-objects/${again.id}/versions/latest`, { token: org.member.token })
    assert.equal(reparsed.body.item.normalizedPayload, {
      name: 'csv-helper',
      description: 'Reads: CSV files',
      body: 'Use `csvkit`.\n',
      metadata: { license: 'MIT' },
    })
  })
})

test('a skill created through POST /v1/config-objects keeps its description in the resolved form', async () => {
  await world(async (t, org) => {
    const resolved = async (body: Record<string, unknown>) => {
      const item = await create(t, org.member.token, { type: 'skill', title: 'Greeter', ...body })
      const res = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token: org.member.token })
      assert.is(res.status, 200)
      return res.body.item
    }
    const fromSource = await resolved({ input: { rawSourceText: SKILL } })
    assert.equal([fromSource.description, fromSource.normalizedPayload.description], ['Greets people', 'Greets people'])
    const own = await resolved({
      description: 'Our greeter',
      input: { rawSourceText: SKILL.replace('hello-world', 'b') },
    })
    assert.is(own.description, 'Our greeter', "the object's own description comes first")
    // Metadata repeating a frontmatter key must not blank the description out of the installed SKILL.md.
    const payload = await resolved({
      input: {
        normalizedPayload: {
          name: 'c',
          description: 'Greets from a payload',
          body: 'Hi.\n',
          metadata: { description: null, license: 'MIT' },
        },
      },
    })
    assert.is(payload.description, 'Greets from a payload')
    assert.is(payload.files[0].content, '---\nname: c\ndescription: Greets from a payload\nlicense: MIT\n---\n\nHi.\n')
  })
})

test('a SKILL.md with block-scalar frontmatter is stored with the description OpenCode reads', async () => {
  await world(async (t, org) => {
    for (const [scalar, description] of [
      ['|\n  Drafts release notes\n  from merged changes.', 'Drafts release notes\nfrom merged changes.'],
      ['>-\n  Drafts release notes\n  from merged changes.', 'Drafts release notes from merged changes.'],
    ] as const) {
      const skillMd = `---\nname: release-notes\ndescription: ${scalar}\n---\n\nRun the script.\n`
      const item = await create(t, org.member.token, {
        type: 'skill',
        title: 'Notes',
        input: { rawSourceText: skillMd },
      })
      const version = await t.client.get(`/v1/config-objects/${item.id}/versions/latest`, { token: org.member.token })
      assert.is(version.body.item.normalizedPayload.description, description)
      const resolved = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token: org.member.token })
      assert.is(resolved.body.item.files[0].content, skillMd)
    }
  })
})

test('an MCP source pasted from opencode.jsonc keeps the keys OpenCode knows and drops the rest', async () => {
  await world(async (t, org) => {
    const source =
      '// the tracker server\n{\n  "name": "tracker",\n  "type": "remote",\n  "url": "https://mcp.example.com/sse",\n  "oauth": false,\n  "timeout": 15000,\n  "note": "not an OpenCode key",\n}\n'
    const item = await create(t, org.member.token, { type: 'mcp', title: 'Tracker', input: { rawSourceText: source } })
    const resolved = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token: org.member.token })
    assert.equal(resolved.body.item.config, {
      mcp: { tracker: { type: 'remote', url: 'https://mcp.example.com/sse', oauth: false, timeout: 15000 } },
    })
  })
})

test('an invalid source for its type is a 422 naming the field at fault, and nothing is stored', async () => {
  await world(async (t, org) => {
    const cases: Array<[string, Record<string, unknown>, string, string]> = [
      [
        'skill',
        { rawSourceText: '---\nname: Bad Name\ndescription: x\n---\nbody' },
        'input.rawSourceText.frontmatter.name',
        'invalid_skill_name',
      ],
      [
        'skill',
        { rawSourceText: `---\nname: ok\ndescription: ${'d'.repeat(1025)}\n---\nbody` },
        'input.rawSourceText.frontmatter.description',
        'invalid_skill_description',
      ],
      [
        'skill',
        { rawSourceText: '---\nname: ok\ndescription: fine\n---\n\n   \n' },
        'input.rawSourceText.body',
        'invalid_skill_body',
      ],
      [
        'skill',
        { rawSourceText: 'no frontmatter at all' },
        'input.rawSourceText.frontmatter',
        'invalid_skill_frontmatter',
      ],
      [
        'skill',
        { rawSourceText: '---\nname: [unclosed\n---\nbody' },
        'input.rawSourceText.frontmatter',
        'invalid_frontmatter',
      ],
      [
        'skill',
        { normalizedPayload: { name: `a${'-b'.repeat(40)}`, description: 'x', body: 'y' } },
        'input.normalizedPayload.name',
        'invalid_skill_name',
      ],
      [
        'mcp',
        { rawSourceText: '{"type":"local","command":[]}' },
        'input.rawSourceText.command',
        'invalid_mcp_definition',
      ],
      [
        'mcp',
        { rawSourceText: '{"type":"remote","url":"ftp://x"}' },
        'input.rawSourceText.url',
        'invalid_mcp_definition',
      ],
      ['mcp', { rawSourceText: 'not json' }, 'input.rawSourceText', 'invalid_json'],
      [
        'agent',
        { rawSourceText: '---\nmode: primary\n---\nprompt' },
        'input.rawSourceText.frontmatter.description',
        'invalid_agent_description',
      ],
      [
        'command',
        { rawSourceText: '---\ndescription: x\n---\n' },
        'input.rawSourceText.body',
        'invalid_command_template',
      ],
      ['tool', { rawSourceText: 'const x = 1' }, 'input.rawSourceText', 'invalid_tool_source'],
      ['custom', { rawSourceText: '[1,2]' }, 'input.rawSourceText', 'invalid_json'],
    ]
    for (const [type, input, path, reason] of cases) {
      const res = await t.client.post('/v1/config-objects', {
        token: org.member.token,
        json: { type, sourceMode: 'cloud', title: 'Bad', input },
      })
      assert.is(res.status, 422, `${type} ${JSON.stringify(input).slice(0, 60)}`)
      assert.is(res.body.code, 'validation_failed')
      assert.is(res.body.details.reason, reason)
      assert.is(res.body.details.issues[0].path, path)
    }
    const both = await t.client.post('/v1/config-objects', {
      token: org.member.token,
      json: { type: 'custom', sourceMode: 'cloud', title: 'x', input: { rawSourceText: '{}', normalizedPayload: {} } },
    })
    assert.is(both.status, 422)
    const connector = await t.client.post('/v1/config-objects', {
      token: org.member.token,
      json: { type: 'custom', sourceMode: 'connector', title: 'x', input: { rawSourceText: '{}' } },
    })
    assert.is(connector.status, 422)
    assert.is(connector.body.details.issues[0].path, 'sourceMode')
    const list = await t.client.get('/v1/config-objects?deleted=include', { token: org.owner.token })
    assert.equal(list.body.items, [])
    // Appending an invalid version leaves the latest version where it was.
    const item = await create(t, org.member.token, { type: 'skill', title: 'Hello', input: { rawSourceText: SKILL } })
    const bad = await t.client.post(`/v1/config-objects/${item.id}/versions`, {
      token: org.member.token,
      json: { input: { rawSourceText: '---\nname: hello-world\ndescription: x\n---\n' } },
    })
    assert.is(bad.status, 422)
    assert.is(
      (await t.client.get(`/v1/config-objects/${item.id}`, { token: org.member.token })).body.item.versionCount,
      1,
    )
  })
})

test('lifecycle: the documented moves succeed, every other move is 409, and only active objects resolve', async () => {
  await world(async (t, org) => {
    const token = org.member.token
    const item = await create(t, token, { type: 'skill', title: 'Hello', input: { rawSourceText: SKILL } })
    const act = (action: string) => t.client.post(`/v1/config-objects/${item.id}/${action}`, { token })
    const expectMove = async (action: string, status: number, state?: string) => {
      const res = await act(action)
      assert.is(res.status, status, `${action}: ${JSON.stringify(res.body)}`)
      if (state) assert.is(res.body.item.status, state)
      if (status === 409) assert.is(res.body.code, 'invalid_lifecycle_transition')
    }
    await expectMove('restore', 409)
    await expectMove('archive', 200, 'archived')
    assert.is(
      (await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token })).body.code,
      'config_object_not_active',
    )
    await expectMove('archive', 409)
    await expectMove('restore', 200, 'active')
    await expectMove('delete', 200, 'deleted')
    const resolved = await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token })
    assert.is(resolved.status, 409)
    assert.is(resolved.body.details.status, 'deleted')
    await expectMove('delete', 409)
    await expectMove('archive', 409)
    const appended = await t.client.post(`/v1/config-objects/${item.id}/versions`, {
      token,
      json: { input: { rawSourceText: SKILL } },
    })
    assert.is(appended.status, 409)
    assert.is(appended.body.code, 'config_object_deleted')
    assert.equal(
      (await t.client.get('/v1/config-objects', { token })).body.items,
      [],
      'deleted objects are hidden by default',
    )
    assert.is((await t.client.get('/v1/config-objects?deleted=only', { token })).body.items[0].id, item.id)
    assert.is(
      (await t.client.get(`/v1/config-objects/${item.id}`, { token })).body.item.deletedAt !== null,
      true,
      'a deleted object can still be read by id',
    )
    await expectMove('restore', 200, 'active')
    assert.is((await t.client.get(`/v1/config-objects/${item.id}/resolved`, { token })).status, 200)
    // The history survived every move.
    assert.is((await t.client.get(`/v1/config-objects/${item.id}/versions`, { token })).body.items.length, 1)
    // An editor (not manager) cannot move it.
    await t.client.post(`/v1/config-objects/${item.id}/access`, {
      token,
      json: { memberId: org.admin.memberId, role: 'editor' },
    })
    const viewerKey = await t.client.post(`/v1/config-objects/${item.id}/archive`, { token: org.member.token })
    assert.is(viewerKey.status, 200)
    const audit = await t.client.get('/v1/audit-events?limit=100', { token: org.owner.token })
    const actions = audit.body.items
      .filter((e: { target: { id: string } }) => e.target.id === item.id)
      .map((e: { action: string }) => e.action)
    assert.ok(
      actions.includes('config_object.created') &&
        actions.includes('config_object.deleted') &&
        actions.includes('config_object.restored'),
    )
  })
})

test.run()
