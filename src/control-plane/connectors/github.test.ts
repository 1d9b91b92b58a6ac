/**
 * The `github` connector against the fake GitHub API (fixtures/fake-github): discovery and sync
 * through the REST API with the account's sealed token, new versions when content changes,
 * transient 503s retried, and a rejected credential failing at once with its reason.
 */
import { startFakeGitHub } from '../../../fixtures/fake-github/fake-github.ts'
import { skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, suite } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/github-connector', { timeoutMs: 60_000 })
const TOKEN = 'ghp_faketoken0123456789'

async function setup(t: AsyncTestPlane, org: FixtureOrg, token: string) {
  const account = await t.client.post('/v1/connector-accounts', {
    token: org.admin.token,
    json: {
      connectorType: 'github',
      remoteId: 'acme',
      displayName: 'Acme on GitHub',
      metadata: { login: 'acme' },
      credentials: { token },
    },
  })
  const instance = await t.client.post('/v1/connector-instances', {
    token: org.admin.token,
    json: { connectorAccountId: account.body.item.id, connectorType: 'github', name: 'acme skills' },
  })
  const target = await t.client.post(`/v1/connector-instances/${instance.body.item.id}/targets`, {
    token: org.admin.token,
    json: { connectorType: 'github', remoteId: 'acme/skills', targetKind: 'repository_branch', config: {} },
  })
  assert.is(target.status, 201)
  await t.client.post(`/v1/connector-targets/${target.body.item.id}/mappings`, {
    token: org.admin.token,
    json: { mappingKind: 'path', selector: '**/SKILL.md', objectType: 'skill' },
  })
  return {
    accountId: account.body.item.id as string,
    instanceId: instance.body.item.id as string,
    targetId: target.body.item.id as string,
  }
}

async function sync(t: AsyncTestPlane, token: string, targetId: string) {
  const accepted = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token })
  return waitFor(
    () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token }),
    (r) => !['queued', 'running'].includes(r.body.item.status),
    15_000,
  )
}

test('a GitHub repository is discovered and synced through the REST API; a change adds a version; 503s are retried', async () => {
  const gh = await startFakeGitHub({ token: TOKEN })
  const t = await startAsyncTestPlane({ file: { connectors: { githubApiUrl: gh.url } } })
  try {
    const first = gh.setFiles('acme/skills', {
      'pdf/SKILL.md': skillText('pdf'),
      'nested/deep/csv/SKILL.md': skillText('csv'),
      '.opencode/commands/ship.md': 'Ship it\n',
    })
    const org = await buildFixtureOrg(t.client, 'gh')
    const { targetId, instanceId } = await setup(t, org, TOKEN)
    const discovery = await t.client.post(`/v1/connector-targets/${targetId}/discovery`, { token: org.admin.token })
    const found = await waitFor(
      () => t.client.get(`/v1/connector-discoveries/${discovery.body.item.id}`, { token: org.admin.token }),
      (r) => r.body.item.status === 'completed' || r.body.item.status === 'failed',
    )
    assert.equal(
      [found.body.item.status, found.body.item.sourceRevision, found.body.item.summary],
      ['completed', first, { command: 1, skill: 2 }],
    )

    const one = await sync(t, org.admin.token, targetId)
    assert.equal(
      [one.body.item.status, one.body.item.sourceRevision, one.body.item.counts.created],
      ['completed', first, 2],
    )
    const second = gh.setFiles('acme/skills', {
      'pdf/SKILL.md': skillText('pdf', 'Reads PDFs well'),
      'nested/deep/csv/SKILL.md': skillText('csv'),
    })
    gh.failNext(2, 503)
    const two = await sync(t, org.admin.token, targetId)
    assert.equal(
      [two.body.item.status, two.body.item.sourceRevision, two.body.item.attemptCount],
      ['completed', second, 3],
      'two 503s, then the third attempt',
    )
    assert.equal([two.body.item.counts.updated, two.body.item.counts.unchanged], [1, 1])
    const objects = await t.client.get(`/v1/config-objects?connectorInstance=${instanceId}&q=pdf`, {
      token: org.admin.token,
    })
    assert.is(objects.body.items.length, 1)
    assert.is(objects.body.items[0].versionCount, 2)

    // A mapping with a plugin puts the objects it creates into that plugin.
    const plugin = await t.client.post('/v1/plugins', { token: org.admin.token, json: { name: 'commands kit' } })
    assert.is(plugin.status, 201)
    gh.setFiles('acme/skills', {
      'pdf/SKILL.md': skillText('pdf', 'Reads PDFs well'),
      'nested/deep/csv/SKILL.md': skillText('csv'),
      '.opencode/commands/ship.md': 'Ship it\n',
    })
    const mapping = await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
      token: org.admin.token,
      json: {
        mappingKind: 'path',
        selector: '.opencode/commands/*.md',
        objectType: 'command',
        pluginId: plugin.body.item.id,
      },
    })
    assert.equal([mapping.status, mapping.body.item.pluginId], [201, plugin.body.item.id])
    const three = await sync(t, org.admin.token, targetId)
    assert.equal([three.body.item.status, three.body.item.counts.created], ['completed', 1])
    const members = await t.client.get(`/v1/plugins/${plugin.body.item.id}/config-objects`, { token: org.admin.token })
    assert.is(members.body.items.length, 1)
  } finally {
    await t.close()
    await gh.close()
  }
})

test('a credential GitHub refuses fails the sync at once with github_unauthorized', async () => {
  const gh = await startFakeGitHub({ token: TOKEN })
  const t = await startAsyncTestPlane({ file: { connectors: { githubApiUrl: gh.url, maxAttempts: 4 } } })
  try {
    gh.setFiles('acme/skills', { 'a/SKILL.md': skillText('a') })
    const org = await buildFixtureOrg(t.client, 'gh401')
    const { targetId } = await setup(t, org, 'ghp_wrong_token_value')
    const failed = await sync(t, org.admin.token, targetId)
    assert.equal(
      [failed.body.item.status, failed.body.item.error.reason, failed.body.item.attemptCount],
      ['failed', 'github_unauthorized', 1],
    )
    assert.not.ok(JSON.stringify(failed.body).includes('ghp_wrong'), 'the token is not echoed')
  } finally {
    await t.close()
    await gh.close()
  }
})

test.run()
