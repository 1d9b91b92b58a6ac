/**
 * A sync survives the control plane being killed: a real control-plane process is SIGKILLed in
 * the middle of a sync of a large repository, started again on the same data directory, and the
 * sync completes exactly once (one config object and one version per item, counts that add up).
 * Responses from the child go through the contract client, with the contract taken from an
 * in-process control plane built from the same declarations.
 */
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { assert, BUN, startChild, suite, withTempDir, type ChildServer } from '../../../tests/harness.ts'
import { startAsyncTestPlane, waitFor } from '../testing/async-test-kit.ts'
import { contractClient, forwardTo } from '../testing/contract-client.ts'
import { buildFixtureOrg } from '../testing/org-fixture.ts'

const test = suite('control-plane/sync-crash', { timeoutMs: 90_000 })
const ENTRY = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../../bin/service-server.ts')
const SKILLS = 1500

test('a sync interrupted by SIGKILL resumes after restart and completes exactly once', async () => {
  await withTempDir(async (dir) => {
    const files: Record<string, string> = {}
    for (let i = 0; i < SKILLS; i++) files[`skills/s${i}/SKILL.md`] = skillText(`s${i}`)
    const repo = createFixtureRepo(join(dir, 'git'), files)
    const config = join(dir, 'cp.json')
    writeFileSync(
      config,
      JSON.stringify({
        logRequests: false,
        openSignUp: true,
        // Long enough that a loaded machine does not let a live attempt's lease lapse (a third attempt).
        jobs: { pollIntervalMs: 20, leaseMs: 3000 },
        connectors: { allowFileUrls: true },
      }),
    )
    const start = () =>
      startChild(
        BUN,
        [ENTRY, '--mode', 'control-plane', '--config', config, '--data-dir', join(dir, 'data'), '--port', '0'],
        { cwd: dir, env: { HOME: dir } },
      )
    const contract = await startAsyncTestPlane()
    let child: ChildServer | null = await start()
    let current = child
    const client = contractClient({
      contract: contract.app.contract,
      fetch: forwardTo(() => current.url),
    })
    try {
      const org = await buildFixtureOrg(client, 'crash')
      const token = org.admin.token
      const account = await client.post('/v1/connector-accounts', {
        token,
        json: { connectorType: 'git', remoteId: 'local', displayName: 'Local' },
      })
      const instance = await client.post('/v1/connector-instances', {
        token,
        json: { connectorAccountId: account.body.item.id, connectorType: 'git', name: 'big' },
      })
      const target = await client.post(`/v1/connector-instances/${instance.body.item.id}/targets`, {
        token,
        json: { connectorType: 'git', remoteId: repo.url, targetKind: 'repository_branch', config: {} },
      })
      await client.post(`/v1/connector-targets/${target.body.item.id}/mappings`, {
        token,
        json: { mappingKind: 'path', selector: 'skills/*/SKILL.md', objectType: 'skill' },
      })
      const accepted = await client.post(`/v1/connector-targets/${target.body.item.id}/sync`, { token })
      const eventPath = `/v1/connector-sync-events/${accepted.body.item.id}`
      const mid = await waitFor(
        () => client.get(eventPath, { token }),
        (r) =>
          r.body.item.counts.processed > 0 || (r.body.item.status !== 'queued' && r.body.item.status !== 'running'),
        30_000,
        5,
      )
      assert.is(mid.body.item.status, 'running', 'caught the sync while it ran')
      child.process.kill('SIGKILL')
      await child.stop()
      child = null
      const before = mid.body.item.counts.processed
      assert.ok(before > 0 && before < SKILLS, `killed after ${before} of ${SKILLS} items`)

      child = await start()
      current = child
      const finished = await waitFor(
        () => client.get(eventPath, { token }),
        (r) => r.body.item.status !== 'queued' && r.body.item.status !== 'running',
        60_000,
        100,
      )
      assert.is(finished.body.item.status, 'completed', JSON.stringify(finished.body.item).slice(0, 1500))
      assert.equal(finished.body.item.counts, {
        total: SKILLS,
        processed: SKILLS,
        created: SKILLS,
        updated: 0,
        unchanged: 0,
        deleted: 0,
        failed: 0,
      })
      assert.is(finished.body.item.attemptCount, 2, 'the interrupted attempt and the one that resumed')
      const job = await client.get(`/v1/jobs/${finished.body.item.jobId}`, { token })
      assert.equal([job.body.item.status, job.body.item.attempts], ['succeeded', 2])
      // Exactly one object per item, each with one version.
      const seen = new Set<string>()
      let cursor: string | null = null
      do {
        const page = await client.get(
          `/v1/config-objects?sourceMode=connector&limit=100${cursor ? `&cursor=${cursor}` : ''}`,
          { token },
        )
        for (const item of page.body.items as Array<{ title: string; versionCount: number }>) {
          assert.is(item.versionCount, 1, `${item.title} has one version`)
          assert.not.ok(seen.has(item.title), `${item.title} exists once`)
          seen.add(item.title)
        }
        cursor = page.body.nextCursor
      } while (cursor)
      assert.is(seen.size, SKILLS)
    } finally {
      if (child) await child.stop('SIGKILL')
      await contract.close()
    }
  })
})

test.run()
