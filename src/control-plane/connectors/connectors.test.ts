/**
 * Connectors end to end with a local bare git repository: account → instance → target →
 * mapping, discovery, sync into versioned config objects, a second sync after the repository
 * changes, per-item failures, and a failing sync that retries with backoff and ends failed with
 * its reason. Every response goes through the contract client.
 */
import { storedText } from '../testing/stored-text.ts'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/connectors', { timeoutMs: 60_000 })

const done = (status: string) => !['queued', 'running'].includes(status)

async function graph(t: AsyncTestPlane, org: FixtureOrg, remoteId: string, label = 'repo') {
  const account = await t.client.post('/v1/connector-accounts', {
    token: org.admin.token,
    json: { connectorType: 'git', remoteId: `local-${label}`, displayName: 'Local git' },
  })
  assert.is(account.status, 201)
  const instance = await t.client.post('/v1/connector-instances', {
    token: org.admin.token,
    json: {
      connectorAccountId: account.body.item.id,
      connectorType: 'git',
      name: `Skills ${label}`,
      config: { team: 'platform' },
    },
  })
  assert.is(instance.status, 201)
  const target = await t.client.post(`/v1/connector-instances/${instance.body.item.id}/targets`, {
    token: org.admin.token,
    json: { connectorType: 'git', remoteId, targetKind: 'repository_branch', config: { branch: 'main' } },
  })
  assert.is(target.status, 201)
  return {
    accountId: account.body.item.id as string,
    instanceId: instance.body.item.id as string,
    targetId: target.body.item.id as string,
  }
}

async function syncAndWait(t: AsyncTestPlane, token: string, targetId: string) {
  const accepted = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token })
  assert.is(accepted.status, 202)
  assert.is(accepted.body.item.status, 'queued')
  return waitFor(
    () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token }),
    (r) => done(r.body.item.status),
    20_000,
  )
}

test('a git repository syncs into versioned config objects; a change adds versions and keeps history', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, {
      'skills/alpha/SKILL.md': skillText('alpha'),
      'skills/beta/SKILL.md': skillText('beta'),
      'skills/broken/SKILL.md': '---\nname: broken\n---\nno description\n',
      '.opencode/commands/deploy.md': '---\ndescription: Deploy\n---\nDeploy $ARGUMENTS\n',
      '.claude-plugin/plugin.json': '{"name":"kit"}',
      'README.md': '# kit\n',
    })
    const t = await startAsyncTestPlane()
    try {
      const org = await buildFixtureOrg(t.client, 'git')
      const { instanceId, targetId } = await graph(t, org, repo.url)
      const skills = await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
        token: org.admin.token,
        json: { mappingKind: 'path', selector: 'skills/*/SKILL.md', objectType: 'skill' },
      })
      assert.is(skills.status, 201)
      assert.is(
        (
          await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
            token: org.admin.token,
            json: { mappingKind: 'path', selector: '.opencode/commands/*.md', objectType: 'command' },
          })
        ).status,
        201,
      )
      assert.is(
        (
          await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
            token: org.admin.token,
            json: { mappingKind: 'path', selector: 'skills/*/SKILL.md', objectType: 'skill' },
          })
        ).status,
        409,
      )

      // Discovery: 202, then re-read by id.
      const discovery = await t.client.post(`/v1/connector-targets/${targetId}/discovery`, { token: org.admin.token })
      assert.is(discovery.status, 202)
      const found = await waitFor(
        () => t.client.get(`/v1/connector-discoveries/${discovery.body.item.id}`, { token: org.admin.token }),
        (r) => done(r.body.item.status),
      )
      assert.is(found.body.item.status, 'completed')
      assert.equal(found.body.item.summary, { command: 1, plugin_manifest: 1, skill: 3 })
      assert.equal(
        found.body.item.items.find((i: { name: string }) => i.name === 'alpha').suggestedSelector,
        'skills/*/SKILL.md',
      )

      // First sync: three objects, one per-item failure → partial.
      const first = await syncAndWait(t, org.admin.token, targetId)
      assert.is(first.body.item.status, 'partial')
      assert.equal(first.body.item.counts, {
        total: 4,
        processed: 4,
        created: 3,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        failed: 1,
      })
      assert.equal(
        first.body.item.failures.map((f: { path: string; reason: string }) => [f.path, f.reason]),
        [['skills/broken/SKILL.md', 'invalid_skill_description']],
      )
      assert.match(first.body.item.sourceRevision, /^[0-9a-f]{40}$/)

      const objects = await t.client.get(`/v1/config-objects?sourceMode=connector&connectorInstance=${instanceId}`, {
        token: org.admin.token,
      })
      assert.equal(objects.body.items.map((o: { title: string }) => o.title).sort(), ['alpha', 'beta', 'deploy'])
      assert.ok(
        objects.body.items.every(
          (o: { sourceMode: string; connectorInstanceId: string }) =>
            o.sourceMode === 'connector' && o.connectorInstanceId === instanceId,
        ),
      )
      const alpha = objects.body.items.find((o: { title: string }) => o.title === 'alpha')

      // Change the repository: alpha changes, broken gets fixed, beta stays, the command goes.
      const deploy = objects.body.items.find((o: { title: string }) => o.title === 'deploy')
      const revision = repo.commit({
        'skills/alpha/SKILL.md': skillText('alpha', 'Does alpha things, better'),
        'skills/broken/SKILL.md': skillText('broken'),
        '.opencode/commands/deploy.md': null,
      })
      const second = await syncAndWait(t, org.admin.token, targetId)
      assert.is(second.body.item.status, 'completed')
      assert.equal(second.body.item.counts, {
        total: 3,
        processed: 3,
        created: 1,
        updated: 1,
        unchanged: 1,
        deleted: 1,
        failed: 0,
      })
      const gone = await t.client.get(`/v1/config-objects/${deploy.id}`, { token: org.admin.token })
      assert.equal(
        [gone.body.item.status, gone.body.item.versionCount],
        ['deleted', 1],
        'a removed file soft-deletes its object; history kept',
      )
      assert.is(second.body.item.sourceRevision, revision)
      const versions = await t.client.get(`/v1/config-objects/${alpha.id}/versions`, { token: org.admin.token })
      assert.is(versions.body.items.length, 2, 'history kept')
      const byNumber = [...versions.body.items].sort(
        (a: { number: number }, b: { number: number }) => a.number - b.number,
      )
      assert.match(byNumber[0].rawSourceText, /Does alpha things\n/)
      assert.match(byNumber[1].rawSourceText, /better/)
      assert.equal(
        byNumber.map((v: { createdVia: string }) => v.createdVia),
        ['connector', 'connector'],
      )
      assert.is(byNumber[1].connectorSyncEventId, second.body.item.id)
      assert.is(byNumber[1].sourceRevisionRef, revision)

      // A third sync with nothing changed writes nothing.
      const third = await syncAndWait(t, org.admin.token, targetId)
      assert.equal(
        [
          third.body.item.status,
          third.body.item.counts.unchanged,
          third.body.item.counts.created + third.body.item.counts.updated + third.body.item.counts.deleted,
        ],
        ['completed', 3, 0],
      )

      const listed = await t.client.get(`/v1/connector-sync-events?connectorTargetId=${targetId}&limit=2`, {
        token: org.admin.token,
      })
      assert.equal(
        listed.body.items.map((e: { id: string }) => e.id),
        [third.body.item.id, second.body.item.id],
      )
      assert.ok(listed.body.nextCursor)
      const instance = await t.client.get(`/v1/connector-instances/${instanceId}`, { token: org.admin.token })
      assert.is(instance.body.item.lastSyncStatus, 'completed')
    } finally {
      await t.close()
    }
  })
})

test('a sync that cannot fetch retries with backoff and ends failed with its reason; retry runs it again', async () => {
  await withTempDir(async (dir) => {
    const t = await startAsyncTestPlane({
      file: { jobs: { retryBaseMs: 150, retryCapMs: 1000 }, connectors: { maxAttempts: 3 } },
    })
    try {
      const org = await buildFixtureOrg(t.client, 'fail')
      const missing = `file://${dir}/missing.git`
      const { targetId } = await graph(t, org, missing)
      assert.is(
        (
          await t.client.post(`/v1/connector-targets/${targetId}/mappings`, {
            token: org.admin.token,
            json: { mappingKind: 'path', selector: '**/SKILL.md', objectType: 'skill' },
          })
        ).status,
        201,
      )
      const started = Date.now()
      const accepted = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token: org.admin.token })
      const busy = await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token: org.admin.token })
      assert.equal(
        [busy.status, busy.body.code, busy.body.details.syncEventId],
        [409, 'sync_in_progress', accepted.body.item.id],
      )
      const seenQueuedAgain = await waitFor(
        () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.admin.token }),
        (r) => r.body.item.nextAttemptAt !== null || done(r.body.item.status),
        10_000,
        10,
      )
      assert.is(
        seenQueuedAgain.body.item.error.reason,
        'git_fetch_failed',
        'a failed attempt is visible with its reason while the next waits',
      )
      const failed = await waitFor(
        () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.admin.token }),
        (r) => done(r.body.item.status),
        15_000,
      )
      const elapsed = Date.now() - started
      assert.is(failed.body.item.status, 'failed')
      assert.is(failed.body.item.attemptCount, 3)
      assert.is(failed.body.item.error.reason, 'git_fetch_failed')
      assert.match(failed.body.item.error.message, /missing\.git|does not exist|not found|repository/i)
      // Backoff 150 ms then 300 ms (±20 %): the three attempts cannot finish sooner.
      assert.ok(elapsed >= 360, `three attempts took ${elapsed} ms`)
      const job = await t.client.get(`/v1/jobs/${failed.body.item.jobId}`, { token: org.admin.token })
      assert.equal(
        [job.body.item.status, job.body.item.attempts, job.body.item.lastError.reason],
        ['failed', 3, 'git_fetch_failed'],
      )

      // Fix the source and retry the event (not the account).
      const repo = createFixtureRepo(dir, { 'a/SKILL.md': skillText('a') })
      assert.is(
        (
          await t.client.patch(`/v1/connector-targets/${targetId}`, {
            token: org.admin.token,
            json: { remoteId: repo.url },
          })
        ).status,
        200,
      )
      const retried = await t.client.post(`/v1/connector-sync-events/${accepted.body.item.id}/retry`, {
        token: org.admin.token,
      })
      assert.equal([retried.status, retried.body.item.status], [202, 'queued'])
      const ok = await waitFor(
        () => t.client.get(`/v1/connector-sync-events/${accepted.body.item.id}`, { token: org.admin.token }),
        (r) => done(r.body.item.status),
        15_000,
      )
      assert.equal([ok.body.item.status, ok.body.item.counts.created, ok.body.item.error], ['completed', 1, null])
      const again = await t.client.post(`/v1/connector-sync-events/${accepted.body.item.id}/retry`, {
        token: org.admin.token,
      })
      assert.equal([again.status, again.body.code], [409, 'sync_not_retriable'])
    } finally {
      await t.close()
    }
  })
})

test('instances are visible to members only through grants; other organizations see 404; secrets stay sealed', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, { 'x/SKILL.md': skillText('x') })
    const t = await startAsyncTestPlane()
    try {
      const org = await buildFixtureOrg(t.client, 'acl')
      const other = await buildFixtureOrg(t.client, 'acl-other')
      const account = await t.client.post('/v1/connector-accounts', {
        token: org.owner.token,
        json: {
          connectorType: 'git',
          remoteId: 'secret-remote',
          displayName: 'With token',
          credentials: { token: 'ghp_supersecretvalue123456' },
        },
      })
      assert.equal([account.status, account.body.item.hasCredentials], [201, true])
      assert.not.ok(JSON.stringify(account.body).includes('supersecret'))
      const { instanceId, targetId } = await graph(t, org, repo.url, 'acl')
      assert.is((await t.client.get(`/v1/connector-instances/${instanceId}`, { token: org.member.token })).status, 404)
      assert.equal((await t.client.get('/v1/connector-instances', { token: org.member.token })).body.items, [])
      assert.is(
        (await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token: org.member.token })).status,
        404,
      )
      const grant = await t.client.post(`/v1/connector-instances/${instanceId}/access`, {
        token: org.admin.token,
        json: { memberId: org.member.memberId, role: 'viewer' },
      })
      assert.is(grant.status, 201)
      assert.is((await t.client.get(`/v1/connector-instances/${instanceId}`, { token: org.member.token })).status, 200)
      assert.is(
        (await t.client.post(`/v1/connector-targets/${targetId}/sync`, { token: org.member.token })).status,
        403,
        'a viewer cannot sync',
      )
      assert.is(
        (
          await t.client.post(`/v1/connector-instances/${instanceId}/access`, {
            token: org.admin.token,
            json: { memberId: org.member.memberId, role: 'editor' },
          })
        ).status,
        201,
      )
      const synced = await syncAndWait(t, org.member.token, targetId)
      assert.is(synced.body.item.status, 'completed', 'an editor can sync (no mappings: nothing to import)')
      for (const path of [
        `/v1/connector-instances/${instanceId}`,
        `/v1/connector-targets/${targetId}`,
        `/v1/connector-accounts/${account.body.item.id}`,
        `/v1/connector-sync-events/${synced.body.item.id}`,
        `/v1/connector-instances/${instanceId}/targets`,
      ]) {
        assert.is((await t.client.get(path, { token: other.owner.token })).status, 404, path)
      }
      assert.is(
        (await t.client.post(`/v1/connector-targets/${targetId}/sync`, { apiKey: other.ownerKey.key })).status,
        404,
      )
      assert.equal((await t.client.get('/v1/connector-sync-events', { token: other.owner.token })).body.items, [])
      const raw = await storedText(t.app)
      assert.ok(raw.length > 1000, 'the stored text was read')
      assert.not.ok(raw.includes('supersecretvalue'), 'the token is not stored in plaintext')
      for (const remoteId of [
        '--upload-pack=evil',
        'ext::sh -c touch% /tmp/pwned',
        'https://user:ghp_secret@git.example/r.git',
      ]) {
        const badUrl = await t.client.post(`/v1/connector-instances/${instanceId}/targets`, {
          token: org.admin.token,
          json: { connectorType: 'git', remoteId, targetKind: 'repository_branch', config: {} },
        })
        assert.equal([badUrl.status, badUrl.body.details.issues[0].path], [422, 'remoteId'], remoteId)
      }
    } finally {
      await t.close()
    }
  })
})

test('file:// targets are refused unless the server allows them', async () => {
  const t = await startAsyncTestPlane({ file: { connectors: { allowFileUrls: false } } })
  try {
    const org = await buildFixtureOrg(t.client, 'nofile')
    const account = await t.client.post('/v1/connector-accounts', {
      token: org.admin.token,
      json: { connectorType: 'git', remoteId: 'a', displayName: 'A' },
    })
    const instance = await t.client.post('/v1/connector-instances', {
      token: org.admin.token,
      json: { connectorAccountId: account.body.item.id, connectorType: 'git', name: 'i' },
    })
    const res = await t.client.post(`/v1/connector-instances/${instance.body.item.id}/targets`, {
      token: org.admin.token,
      json: { connectorType: 'git', remoteId: 'file:///etc', targetKind: 'repository_branch', config: {} },
    })
    assert.equal([res.status, res.body.details.issues[0].path], [422, 'remoteId'])
    assert.match(res.body.details.issues[0].message, /allowFileUrls/)
    const mismatch = await t.client.post('/v1/connector-instances', {
      token: org.admin.token,
      json: { connectorAccountId: account.body.item.id, connectorType: 'github', name: 'j' },
    })
    assert.equal([mismatch.status, mismatch.body.details.issues[0].path], [422, 'connectorType'])
  } finally {
    await t.close()
  }
})

test.run()
