/**
 * Delivered skills as MCP resources through the SDK's own client over real HTTP: the list, the
 * index and every file byte-exact (text and binary), nothing that is not delivered, and
 * `list_changed` / `resources/updated` after an admin publishes a version through another
 * instance (PostgreSQL; on SQLite, one process per file, through the same one).
 */
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { assert, suite } from '../../../tests/harness.ts'
import type { ContractClient } from '../testing/contract-client.ts'
import { TEST_ENGINE } from '../testing/test-database.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'
import { connectClient, startMcpTestPlane } from './mcp-test-kit.ts'

const test = suite('control-plane/mcp/resources', { timeoutMs: 60_000 })

const skillMd = (name: string, body = 'Follow the steps.') =>
  `---\nname: ${name}\ndescription: The ${name} skill\n---\n\n${body}\n`

/** Bytes that are not UTF-8, so the file travels as base64. */
const BINARY = new Uint8Array([0, 1, 2, 0xff, 0xfe, 0x80, 10, 13, 0])

async function makeSkill(client: ContractClient, token: string, name: string, files: unknown[] = []) {
  const res = await client.post('/v1/skills', { token, json: { skillMd: skillMd(name), files } })
  assert.is(res.status, 201, JSON.stringify(res.body))
  return res.body.item as { id: string; versionId: string }
}

/** A hub with `skillIds`, assigned to the whole organization. */
async function deliverToEveryone(client: ContractClient, token: string, skillIds: string[]) {
  const hub = await client.post('/v1/skill-hubs', { token, json: { name: `hub-${skillIds.length}-${Date.now()}` } })
  assert.is(hub.status, 201, JSON.stringify(hub.body))
  for (const skillId of skillIds) {
    const added = await client.post(`/v1/skill-hubs/${hub.body.item.id}/skills`, { token, json: { skillId } })
    assert.is(added.status, 201, JSON.stringify(added.body))
  }
  const assigned = await client.post(`/v1/skill-hubs/${hub.body.item.id}/assignments`, {
    token,
    json: { orgWide: true },
  })
  assert.is(assigned.status, 201, JSON.stringify(assigned.body))
}

test('a member lists and reads exactly the delivered skills, byte for byte, and nothing else', async () => {
  const t = await startMcpTestPlane()
  try {
    const owner = t.org.owner.token
    const files = [
      { path: 'scripts/run.sh', content: '#!/bin/sh\necho "ünïcode"\n', executable: true },
      { path: 'assets/blob.bin', contentBase64: Buffer.from(BINARY).toString('base64') },
    ]
    const delivered = await makeSkill(t.plane.client, owner, 'shipped', files)
    const hidden = await makeSkill(t.plane.client, owner, 'not-shipped')
    await deliverToEveryone(t.plane.client, owner, [delivered.id])
    const { client } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    try {
      const listed = await client.listResources()
      assert.equal(
        listed.resources.map((r) => r.uri),
        [
          'skills://index',
          'skill://shipped/SKILL.md',
          'skill://shipped/assets/blob.bin',
          'skill://shipped/scripts/run.sh',
        ],
      )
      const md = await client.readResource({ uri: 'skill://shipped/SKILL.md' })
      assert.equal(md.contents, [
        { uri: 'skill://shipped/SKILL.md', mimeType: 'text/markdown', text: skillMd('shipped') },
      ])
      const script = await client.readResource({ uri: 'skill://shipped/scripts/run.sh' })
      assert.is((script.contents[0] as { text: string }).text, files[0]!.content)
      const blob = await client.readResource({ uri: 'skill://shipped/assets/blob.bin' })
      const bytes = Buffer.from((blob.contents[0] as { blob: string }).blob, 'base64')
      assert.equal([...bytes], [...BINARY])
      const index = JSON.parse(
        ((await client.readResource({ uri: 'skills://index' })).contents[0] as { text: string }).text,
      )
      assert.equal(
        index.skills.map((s: { name: string; objectId: string; versionId: string }) => [
          s.name,
          s.objectId,
          s.versionId,
        ]),
        [['shipped', delivered.id, delivered.versionId]],
      )
      // The same set as GET /v1/me/delivery.
      const http = await t.plane.client.get('/v1/me/delivery', { token: t.org.member.token })
      assert.is(http.status, 200)
      assert.is(index.digest, http.body.digest)
      // What is not delivered is not found, whoever can see it otherwise.
      for (const uri of ['skill://not-shipped/SKILL.md', 'skill://shipped/missing.md', 'skill://../etc/passwd']) {
        const refused = await client.readResource({ uri }).then(
          () => null,
          (error: { code?: number }) => error,
        )
        assert.ok(refused, `${uri} must not be readable`)
        assert.is(refused?.code, -32002, uri)
      }
      assert.ok(hidden.id)
    } finally {
      await client.close()
    }
  } finally {
    await t.close()
  }
})

test('a version published through another instance reaches the client as list_changed and resources/updated', async () => {
  const t = await startMcpTestPlane()
  // PostgreSQL: a second instance on the same database. SQLite is one process per file.
  const other =
    TEST_ENGINE === 'postgres'
      ? await startTestControlPlane({ sameDatabaseAs: t.plane, startAt: t.plane.clock.now() })
      : null
  try {
    const owner = t.org.owner.token
    const first = await makeSkill(t.plane.client, owner, 'changing')
    await deliverToEveryone(t.plane.client, owner, [first.id])
    const { client } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    try {
      const listChanged: unknown[] = []
      const updated: string[] = []
      client.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => void listChanged.push(n))
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updated.push(n.params.uri))
      assert.is((await client.listResources()).resources.length, 2)
      await client.subscribeResource({ uri: 'skill://changing/SKILL.md' })
      await client.subscribeResource({ uri: 'skills://index' })
      const via = other?.client ?? t.plane.client
      const published = await via.post(`/v1/config-objects/${first.id}/versions`, {
        token: t.org.admin.token,
        json: {
          baseVersionId: first.versionId,
          input: { rawSourceText: skillMd('changing', 'New steps.'), files: [{ path: 'notes.md', content: 'n\n' }] },
        },
      })
      assert.is(published.status, 201, JSON.stringify(published.body))
      const deadline = Date.now() + 10_000
      while ((listChanged.length === 0 || updated.length < 2) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25))
      assert.is(listChanged.length, 1, 'a new file is a new resource')
      assert.equal(updated.sort(), ['skill://changing/SKILL.md', 'skills://index'])
      const md = await client.readResource({ uri: 'skill://changing/SKILL.md' })
      assert.is((md.contents[0] as { text: string }).text, skillMd('changing', 'New steps.'))
      // A change that does not concern the member's set sends nothing.
      await makeSkill(via, owner, 'unrelated')
      await new Promise((r) => setTimeout(r, 300))
      assert.is(listChanged.length, 1)
      assert.is(updated.length, 2)
    } finally {
      await client.close()
    }
  } finally {
    await other?.close()
    await t.close()
  }
})

test.run()
