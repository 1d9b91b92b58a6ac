/**
 * A connector sync checks, when it runs, that the member who started it can still edit each plugin
 * its mappings import into: access lost after the mapping was made turns those files into
 * per-item failures with reason `plugin_access_denied`, the event ends `partial` (or `failed`
 * when nothing else was imported), and the plugin's objects are left as they were.
 */
import { join } from 'node:path'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/connector-sync', { timeoutMs: 60_000 })

const done = (status: string) => !['queued', 'running'].includes(status)

test('a sync into a plugin its member can no longer edit fails those items with plugin_access_denied, ends partial or failed, and changes nothing in the plugin', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, {
      'plugin/tool/SKILL.md': skillText('tool', 'First version'),
      'mine/notes/SKILL.md': skillText('notes'),
    })
    const other = createFixtureRepo(join(dir, 'other'), {
      'plugin/a/SKILL.md': skillText('a'),
      'plugin/b/SKILL.md': skillText('b'),
    })
    const t = await startAsyncTestPlane()
    try {
      const org = await buildFixtureOrg(t.client, 'lost-editor')
      const member = org.member.token
      const plugin = await t.client.post('/v1/plugins', { token: org.admin.token, json: { name: 'Team tools' } })
      const pluginId: string = plugin.body.item.id
      const grant = await t.client.post(`/v1/plugins/${pluginId}/access`, {
        token: org.admin.token,
        json: { memberId: org.member.memberId, role: 'editor' },
      })
      assert.is(grant.status, 201)
      const assigned = await t.client.post(`/v1/plugins/${pluginId}/assignments`, {
        token: org.admin.token,
        json: { orgWide: true },
      })
      assert.is(assigned.status, 201)

      const account = await t.client.post('/v1/connector-accounts', {
        token: org.admin.token,
        json: { connectorType: 'git', displayName: 'local', remoteId: 'local' },
      })
      const instance = await t.client.post('/v1/connector-instances', {
        token: org.admin.token,
        json: { connectorAccountId: account.body.item.id, connectorType: 'git', name: 'member git' },
      })
      const instanceId: string = instance.body.item.id
      await t.client.post(`/v1/connector-instances/${instanceId}/access`, {
        token: org.admin.token,
        json: { memberId: org.member.memberId, role: 'editor' },
      })
      const newTarget = async (url: string, mappings: Array<Record<string, unknown>>) => {
        const target = await t.client.post(`/v1/connector-instances/${instanceId}/targets`, {
          token: member,
          json: {
            connectorType: 'git',
            remoteId: url,
            targetKind: 'repository_branch',
            config: { branch: 'main' },
          },
        })
        for (const json of mappings) {
          const mapping = await t.client.post(`/v1/connector-targets/${target.body.item.id}/mappings`, {
            token: member,
            json: { mappingKind: 'path', objectType: 'skill', ...json },
          })
          assert.is(mapping.status, 201, 'an editor of the plugin may map into it')
        }
        return target.body.item.id as string
      }
      const targetId = await newTarget(repo.url, [
        { selector: 'plugin/*/SKILL.md', pluginId },
        { selector: 'mine/*/SKILL.md' },
      ])
      // Mapped while the member could edit the plugin, first synced after that ended.
      const laterId = await newTarget(other.url, [{ selector: 'plugin/*/SKILL.md', pluginId }])
      const sync = async (id = targetId) => {
        const accepted = await t.client.post(`/v1/connector-targets/${id}/sync`, { token: member })
        assert.is(accepted.status, 202)
        return waitFor(
          () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: member }),
          (r) => done(r.body.item.status),
          20_000,
        )
      }
      const first = await sync()
      assert.equal([first.body.item.status, first.body.item.counts.created], ['completed', 2])
      // The sync's moves are in the change feed of whoever can see its connector instance.
      const feed = await t.client.get('/v1/events?after=0&limit=100', { token: member })
      const moves = (feed.body.items as Array<{ kind: string; data: any }>)
        .filter((e) => e.kind === 'connector_sync.state_changed' && e.data.syncEventId === first.body.item.id)
        .map((e) => e.data.status)
      assert.equal(moves, ['running', 'completed'])
      // The plugin is delivered to the organization: everyone hears of the synced objects at once.
      const told = (feed.body.items as Array<{ kind: string; data: any }>).filter(
        (e) => e.kind === 'delivery.changed' && e.data.cause === 'connector_sync.items_written',
      )
      assert.equal(
        told.map((e) => e.data.scope),
        ['organization'],
      )
      const delivered = await t.client.get('/v1/me/delivery', { token: org.owner.token })
      assert.equal(
        delivered.body.items.map((i: { name: string; reasons: Array<{ via: string }> }) => [i.name, i.reasons[0]!.via]),
        [['tool', 'plugin']],
      )
      const inPlugin = async () =>
        (await t.client.get(`/v1/plugins/${pluginId}/config-objects`, { token: org.admin.token })).body.items.map(
          (m: { configObject: { id: string; title: string } }) => m.configObject,
        )
      const [tool] = await inPlugin()
      assert.is(tool.title, 'tool')

      // The member loses editor on the plugin; the source changes and gains a file under it.
      assert.is(
        (await t.client.delete(`/v1/plugins/${pluginId}/access/${grant.body.item.id}`, { token: org.admin.token }))
          .status,
        204,
      )
      repo.commit({
        'plugin/tool/SKILL.md': skillText('tool', 'Second version'),
        'plugin/extra/SKILL.md': skillText('extra'),
        'mine/notes/SKILL.md': skillText('notes', 'Edited notes'),
      })
      const second = await sync()
      assert.is(second.body.item.status, 'partial')
      assert.equal(second.body.item.failures.map((f: { path: string; reason: string }) => [f.path, f.reason]).sort(), [
        ['plugin/extra/SKILL.md', 'plugin_access_denied'],
        ['plugin/tool/SKILL.md', 'plugin_access_denied'],
      ])
      assert.equal([second.body.item.counts.updated, second.body.item.counts.failed], [1, 2])
      assert.equal(
        (await inPlugin()).map((o: { id: string }) => o.id),
        [tool.id],
        'nothing added to the plugin',
      )
      const versions = await t.client.get(`/v1/config-objects/${tool.id}/versions`, { token: org.admin.token })
      assert.is(versions.body.items.length, 1, 'the plugin object was not updated')

      // A target whose only mapping goes into the plugin: the event fails as a whole.
      const third = await sync(laterId)
      assert.equal(
        [third.body.item.status, third.body.item.error?.reason, third.body.item.counts.failed],
        ['failed', 'all_items_failed', 2],
      )
    } finally {
      await t.close()
    }
  })
})

test.run()
