/**
 * What an instance editor may not do with a connector: send the account's token anywhere but the
 * account's own remote (checked on targets and again when a sync or discovery runs), and map or
 * sync files into a plugin they cannot edit (checked on mappings and again when a sync runs).
 * A local HTTP server records every Authorization header it is sent.
 */
import { createServer, type Server } from 'node:http'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/connector-authz', { timeoutMs: 60_000 })

const done = (status: string) => !['queued', 'running'].includes(status)
const SECRET = 'SECRET-CORP-TOKEN-123'

/** A server answering 404 to everything, remembering the Authorization header of each request. */
async function recordingServer(): Promise<{
  server: Server
  port: number
  authorizations: string[]
  requests: number
}> {
  const state = { authorizations: [] as string[], requests: 0 }
  const server = createServer((req, res) => {
    state.requests++
    if (req.headers.authorization) state.authorizations.push(req.headers.authorization)
    res.statusCode = 404
    res.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()))
  const port = (server.address() as { port: number }).port
  return Object.assign(state, { server, port })
}

async function gitInstance(
  t: AsyncTestPlane,
  adminToken: string,
  memberId: string,
  name: string,
  account: { remoteId: string; credentials?: { token: string } },
) {
  const created = await t.client.post('/v1/connector-accounts', {
    token: adminToken,
    json: { connectorType: 'git', displayName: name, ...account },
  })
  assert.is(created.status, 201)
  const instance = await t.client.post('/v1/connector-instances', {
    token: adminToken,
    json: { connectorAccountId: created.body.item.id, connectorType: 'git', name },
  })
  assert.is(instance.status, 201)
  const grant = await t.client.post(`/v1/connector-instances/${instance.body.item.id}/access`, {
    token: adminToken,
    json: { memberId, role: 'editor' },
  })
  assert.is(grant.status, 201)
  return { accountId: created.body.item.id as string, instanceId: instance.body.item.id as string }
}

test('an editor cannot point a target of an account with credentials at another host or at http://, and no sync sends the token elsewhere', async () => {
  const rec = await recordingServer()
  const t = await startAsyncTestPlane({ file: { connectors: { allowFileUrls: false, maxAttempts: 1 } } })
  try {
    const org = await buildFixtureOrg(t.client, 'scope')
    const { instanceId } = await gitInstance(t, org.admin.token, org.member.memberId, 'corp git', {
      remoteId: 'https://git.corp.example/platform',
      credentials: { token: SECRET },
    })
    const attacker = `http://127.0.0.1:${rec.port}/steal.git`
    const target = (remoteId: string) =>
      t.client.post(`/v1/connector-instances/${instanceId}/targets`, {
        token: org.member.token,
        json: { connectorType: 'git', remoteId, targetKind: 'repository_branch', config: {} },
      })
    for (const remoteId of [
      attacker,
      `https://127.0.0.1:${rec.port}/steal.git`,
      'http://git.corp.example/platform/skills.git',
      'https://git.corp.example:8443/platform/skills.git',
      'https://git.corp.example.evil.test/platform/skills.git',
      'https://git.corp.example@evil.test/platform/skills.git',
      'https://git.corp.example/platformx/skills.git',
      'https://git.corp.example/platform/../elsewhere/skills.git',
      'https://git.corp.example/platform/%2e%2e/elsewhere/skills.git',
      'ssh://git@evil.test/platform/skills.git',
    ]) {
      const res = await target(remoteId)
      assert.equal(
        [res.status, res.body.code, res.body.details?.issues?.[0]?.path],
        [422, 'validation_failed', 'remoteId'],
        remoteId,
      )
    }
    assert.match((await target(attacker)).body.details.issues[0].message, /http:\/\//)

    // Under the account's remote is fine; moving it away afterwards is not.
    const allowed = await target('https://git.corp.example/platform/skills.git')
    assert.is(allowed.status, 201)
    const moved = await t.client.patch(`/v1/connector-targets/${allowed.body.item.id}`, {
      token: org.member.token,
      json: { remoteId: attacker },
    })
    assert.equal(
      [moved.status, moved.body.code, moved.body.details.issues[0].path],
      [422, 'validation_failed', 'remoteId'],
    )
    assert.is(
      (await t.client.get(`/v1/connector-targets/${allowed.body.item.id}`, { token: org.member.token })).body.item
        .remoteId,
      'https://git.corp.example/platform/skills.git',
    )

    // A target created before the account had credentials is checked again when a sync or a
    // discovery runs, right before the token would be attached.
    const legacy = await gitInstance(t, org.admin.token, org.member.memberId, 'legacy git', {
      remoteId: 'https://git.corp.example/legacy',
    })
    const old = await t.client.post(`/v1/connector-instances/${legacy.instanceId}/targets`, {
      token: org.member.token,
      json: { connectorType: 'git', remoteId: attacker, targetKind: 'repository_branch', config: {} },
    })
    assert.is(old.status, 201, 'without credentials there is no token to protect')
    assert.is(
      (
        await t.client.patch(`/v1/connector-accounts/${legacy.accountId}`, {
          token: org.admin.token,
          json: { credentials: { token: SECRET } },
        })
      ).status,
      200,
    )
    const accepted = await t.client.post(`/v1/connector-targets/${old.body.item.id}/sync`, { token: org.member.token })
    assert.is(accepted.status, 202)
    const synced = await waitFor(
      () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.member.token }),
      (r) => done(r.body.item.status),
      20_000,
    )
    assert.equal([synced.body.item.status, synced.body.item.error?.reason], ['failed', 'remote_outside_account'])
    const discovery = await t.client.post(`/v1/connector-targets/${old.body.item.id}/discovery`, {
      token: org.member.token,
    })
    assert.is(discovery.status, 202)
    const found = await waitFor(
      () => t.client.get(`/v1/connector-discoveries/${discovery.body.item.id}`, { token: org.member.token }),
      (r) => done(r.body.item.status),
      20_000,
    )
    assert.equal([found.body.item.status, found.body.item.error?.reason], ['failed', 'remote_outside_account'])

    assert.equal(rec.authorizations, [], 'the recording server was never sent a credential')
    assert.is(rec.requests, 0, 'nor contacted at all')
  } finally {
    await t.close()
    rec.server.close()
  }
})

test('a member without editor on a plugin cannot create or update a mapping into it, and a sync they start imports nothing into it', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, {
      'skills/evil/SKILL.md': skillText('evil', 'Injected by a member'),
      'mine/notes/SKILL.md': skillText('notes'),
    })
    const t = await startAsyncTestPlane()
    try {
      const org = await buildFixtureOrg(t.client, 'inject')
      const plugin = await t.client.post('/v1/plugins', { token: org.admin.token, json: { name: 'Official tools' } })
      assert.is(plugin.status, 201)
      const pluginId: string = plugin.body.item.id
      const { instanceId } = await gitInstance(t, org.admin.token, org.member.memberId, 'member sandbox', {
        remoteId: 'local',
      })
      const target = await t.client.post(`/v1/connector-instances/${instanceId}/targets`, {
        token: org.member.token,
        json: { connectorType: 'git', remoteId: repo.url, targetKind: 'repository_branch', config: { branch: 'main' } },
      })
      assert.is(target.status, 201)
      const targetId: string = target.body.item.id
      const mapInto = (json: Record<string, unknown>) =>
        t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
          token: org.member.token,
          json: { mappingKind: 'path', objectType: 'skill', ...json },
        })

      // A plugin the member cannot see: 404, as for adding config objects to it directly.
      const direct = await t.client.post('/v1/config-objects', {
        token: org.member.token,
        json: {
          type: 'skill',
          sourceMode: 'cloud',
          title: 'x',
          input: { rawSourceText: skillText('x') },
          pluginIds: [pluginId],
        },
      })
      assert.equal([direct.status, direct.body.code], [404, 'plugin_not_found'])
      const created = await mapInto({ selector: 'skills/*/SKILL.md', pluginId })
      assert.equal([created.status, created.body.code], [404, 'plugin_not_found'])
      const own = await mapInto({ selector: 'mine/*/SKILL.md' })
      assert.is(own.status, 201)
      const updated = await t.client.patch(`/v1/connector-mappings/${own.body.item.id}`, {
        token: org.member.token,
        json: { pluginId },
      })
      assert.equal([updated.status, updated.body.code], [404, 'plugin_not_found'])
      // The admin's mapping into the plugin cannot be redirected by the member either.
      const official = await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
        token: org.admin.token,
        json: { mappingKind: 'path', selector: 'official/*/SKILL.md', objectType: 'skill', pluginId },
      })
      assert.is(official.status, 201)
      const widened = await t.client.patch(`/v1/connector-mappings/${official.body.item.id}`, {
        token: org.member.token,
        json: { selector: 'skills/*/SKILL.md' },
      })
      assert.equal([widened.status, widened.body.code], [404, 'plugin_not_found'])

      // Seeing the plugin (viewer) is not enough: 403.
      assert.is(
        (
          await t.client.post(`/v1/plugins/${pluginId}/access`, {
            token: org.admin.token,
            json: { memberId: org.member.memberId, role: 'viewer' },
          })
        ).status,
        201,
      )
      assert.is((await mapInto({ selector: 'skills/*/SKILL.md', pluginId })).status, 403)
      assert.is(
        (
          await t.client.patch(`/v1/connector-mappings/${own.body.item.id}`, {
            token: org.member.token,
            json: { pluginId },
          })
        ).status,
        403,
      )
      assert.is(
        (await t.client.get(`/v1/connector-mappings/${official.body.item.id}`, { token: org.member.token })).body.item
          .selector,
        'official/*/SKILL.md',
      )

      // The admin widens their own mapping; a sync the member starts still imports nothing into
      // the plugin, since the member cannot edit it.
      assert.is(
        (
          await t.client.patch(`/v1/connector-mappings/${official.body.item.id}`, {
            token: org.admin.token,
            json: { selector: 'skills/*/SKILL.md' },
          })
        ).status,
        200,
      )
      const accepted = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token: org.member.token })
      assert.is(accepted.status, 202)
      const synced = await waitFor(
        () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.member.token }),
        (r) => done(r.body.item.status),
        20_000,
      )
      assert.is(synced.body.item.status, 'partial')
      assert.equal([synced.body.item.counts.created, synced.body.item.counts.failed], [1, 1])
      assert.equal(
        synced.body.item.failures.map((f: { path: string; reason: string }) => [f.path, f.reason]),
        [['skills/evil/SKILL.md', 'plugin_access_denied']],
      )
      const inPlugin = await t.client.get(`/v1/plugins/${pluginId}/config-objects`, { token: org.admin.token })
      assert.equal(inPlugin.body.items, [], 'nothing was synced into the plugin')
      const objects = await t.client.get(`/v1/config-objects?sourceMode=connector&connectorInstance=${instanceId}`, {
        token: org.admin.token,
      })
      assert.equal(
        objects.body.items.map((o: { title: string }) => o.title),
        ['notes'],
      )

      // Retried by the admin (who can edit the plugin), the same event imports into it.
      const retried = await t.client.post(`/v1/connector-sync-events/${accepted.body.item.id}/retry`, {
        token: org.admin.token,
      })
      assert.is(retried.status, 202)
      const again = await waitFor(
        () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.admin.token }),
        (r) => done(r.body.item.status),
        20_000,
      )
      assert.equal([again.body.item.status, again.body.item.failures], ['completed', []])
      const after = await t.client.get(`/v1/plugins/${pluginId}/config-objects`, { token: org.admin.token })
      assert.equal(
        after.body.items.map((m: { membershipSource: string; configObject: { title: string } }) => [
          m.configObject.title,
          m.membershipSource,
        ]),
        [['evil', 'connector']],
      )
    } finally {
      await t.close()
    }
  })
})

test.run()
