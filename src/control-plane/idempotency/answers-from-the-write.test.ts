/**
 * Writes answer with what their transaction wrote (nothing is read after the commit, where a lost
 * connection would turn a change that was made into an error), and that answer is what a read of
 * the resource returns right after: a skill created with files, a version appended, an object
 * archived, a plugin renamed, the organization renamed, a member's role changed.
 */
import { assert, suite } from '../../../tests/harness.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'
import { startTestControlPlane } from '../testing/test-control-plane.ts'

const test = suite('control-plane/answers-from-the-write', { timeoutMs: 60_000 })

test('each write answers what a read right after returns', async () => {
  const t = await startTestControlPlane()
  try {
    const org = await buildFixtureOrg(t.client, 'answers')
    const token = org.owner.token
    const same = async (write: { status: number; body: any }, status: number, readPath: string) => {
      assert.is(write.status, status, JSON.stringify(write.body))
      const read = await t.client.get(readPath, { token })
      assert.is(read.status, 200)
      assert.equal(write.body.item, read.body.item, readPath)
    }
    const skill = await t.client.post('/v1/skills', {
      token,
      json: {
        skillMd: '---\nname: answers\ndescription: Answers from the write\n---\n\nDo it.\n',
        files: [
          { path: 'scripts/run.sh', contentBase64: Buffer.from('echo hi\n').toString('base64'), executable: true },
        ],
      },
    })
    await same(skill, 201, `/v1/skills/${skill.body.item.id}`)
    assert.is(skill.body.item.files.length, 1)

    const id = skill.body.item.id as string
    const version = await t.client.post(`/v1/config-objects/${id}/versions`, {
      token,
      json: { input: { rawSourceText: '---\nname: answers\ndescription: Second\n---\n\nDo it again.\n' } },
    })
    await same(version, 201, `/v1/config-objects/${id}/versions/${version.body.item.id}`)
    await same(await t.client.post(`/v1/config-objects/${id}/archive`, { token }), 200, `/v1/config-objects/${id}`)

    const plugin = await t.client.post('/v1/plugins', { token, json: { name: 'Tools' } })
    await same(plugin, 201, `/v1/plugins/${plugin.body.item.id}`)
    const renamed = await t.client.patch(`/v1/plugins/${plugin.body.item.id}`, { token, json: { name: 'Kit' } })
    await same(renamed, 200, `/v1/plugins/${plugin.body.item.id}`)
    assert.is(renamed.body.item.name, 'Kit')

    await same(await t.client.patch('/v1/org', { token, json: { name: 'Renamed' } }), 200, '/v1/org')
    const role = await t.client.patch(`/v1/members/${org.member.memberId}`, { token, json: { role: 'admin' } })
    await same(role, 200, `/v1/members/${org.member.memberId}`)
    assert.is(role.body.item.role, 'admin')
  } finally {
    await t.close()
  }
})

test.run()
