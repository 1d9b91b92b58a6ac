/**
 * The MCP endpoint in the audit log: a write tool's request carries its one named event with origin
 * mcp and the request id; the handshake, tool lists and read tools add none.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { connectClient, startMcpTestPlane, toolJson } from '../mcp/mcp-test-kit.ts'

const test = suite('audit log: MCP requests', { timeoutMs: 60_000 })

test('an MCP write tool leaves one mcp event with its request id; reads and the handshake leave none', async () => {
  const t = await startMcpTestPlane({ label: 'mcpaudit' })
  try {
    const db = t.plane.app.database.db
    const before = await db.selectFrom('audit_event').select('id').execute()
    const { client } = await connectClient(t.mcpUrl, { token: t.org.member.token })
    try {
      await client.listTools()
      const created = toolJson(
        await client.callTool({
          name: 'create_skill',
          arguments: { skillMd: '---\nname: audited\ndescription: An audited skill\n---\n\nBody.\n' },
        }),
      )
      await client.callTool({ name: 'search', arguments: { query: 'audited' } })
      const skill = created.skill as { id: string }
      const seen = new Set(before.map((row) => row.id))
      const added = (await db.selectFrom('audit_event').selectAll().execute()).filter((row) => !seen.has(row.id))
      assert.equal(
        added.map((e) => [e.action, e.origin, e.outcome, e.target_id, e.actor_member_id, e.route]),
        [['config_object.created', 'mcp', 'success', skill.id, t.org.member.memberId, 'POST /mcp']],
      )
      assert.ok(added[0]!.request_id, 'the event names its request')
    } finally {
      await client.close()
    }
  } finally {
    await t.close()
  }
})

test.run()
