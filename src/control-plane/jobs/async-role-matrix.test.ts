/**
 * Role matrix and isolation matrix for the asynchronous families (jobs, Workers, connectors),
 * generated from the policy table by `testing/role-matrix.ts`: every route × {owner, admin,
 * member, owner's API key, admin's API key, no credential} answers the status the table implies.
 * Per-instance grants are part of the world: the member holds manager on the instances built for
 * them, so their row tests the policy table, not the grant. Then every id-taking route called
 * with another organization's ids is 404 and changes nothing.
 */
import { assert, suite, withTempDir } from '../../../tests/harness.ts'
import { createFixtureRepo, skillText } from '../../../fixtures/git-repos/git-repo.ts'
import { buildFixtureOrg, type FixtureOrg } from '../testing/org-fixture.ts'
import { MATRIX_CALLERS, runRoleMatrix, type MatrixRequests, type MatrixWorld } from '../testing/role-matrix.ts'
import type { TestControlPlane } from '../testing/test-control-plane.ts'
import type { ContractClient } from '../testing/contract-client.ts'
import { startAsyncTestPlane, waitFor, type AsyncTestPlane } from '../testing/async-test-kit.ts'

const test = suite('control-plane/async-role-matrix', { timeoutMs: 120_000 })
const TAGS = ['jobs', 'workers', 'worker-heartbeat', 'connectors']

interface Graph {
  accountId: string
  instanceId: string
  targetId: string
  mappingId: string
}

async function buildGraph(client: ContractClient, org: FixtureOrg, remoteId: string, n: number): Promise<Graph> {
  const token = org.owner.token
  const account = await client.post('/v1/connector-accounts', {
    token,
    json: { connectorType: 'git', remoteId: `acct-${n}`, displayName: 'Matrix' },
  })
  const instance = await client.post('/v1/connector-instances', {
    token,
    json: { connectorAccountId: account.body.item.id, connectorType: 'git', name: `instance ${n}` },
  })
  const instanceId: string = instance.body.item.id
  await client.post(`/v1/connector-instances/${instanceId}/access`, {
    token,
    json: { memberId: org.member.memberId, role: 'manager' },
  })
  const target = await client.post(`/v1/connector-instances/${instanceId}/targets`, {
    token,
    json: { connectorType: 'git', remoteId, targetKind: 'repository_branch', config: {} },
  })
  const mapping = await client.post(`/v1/connector-targets/${target.body.item.id}/mappings`, {
    token,
    json: { mappingKind: 'path', selector: '**/SKILL.md', objectType: 'skill' },
  })
  return { accountId: account.body.item.id, instanceId, targetId: target.body.item.id, mappingId: mapping.body.item.id }
}

async function failedSync(
  client: ContractClient,
  org: FixtureOrg,
  missingUrl: string,
  n: number,
): Promise<{ eventId: string; jobId: string }> {
  const g = await buildGraph(client, org, missingUrl, n)
  const sync = await client.post(`/v1/connector-targets/${g.targetId}/sync`, { token: org.owner.token })
  const failed = await waitFor(
    () => client.get(`/v1/connector-sync-events/${sync.body.item.id}`, { token: org.owner.token }),
    (r) => r.body.item.status === 'failed',
    10_000,
  )
  if (failed.body.item.status !== 'failed') throw new Error(`the sync did not fail in time: ${failed.body.item.status}`)
  return { eventId: failed.body.item.id, jobId: failed.body.item.jobId }
}

test('every job, Worker and connector route answers each caller with the status the policy table implies; other organizations get 404', async () => {
  await withTempDir(async (dir) => {
    const repo = createFixtureRepo(dir, { 'a/SKILL.md': skillText('a') })
    const missing = `file://${dir}/missing.git`
    // Runtimes report nowhere, so Workers stay provisioning and the matrix does not wait on them.
    const t: AsyncTestPlane = await startAsyncTestPlane({
      // Provisioning attempts hold a job slot until their runtime reports or the deadline passes, so
      // give syncs slots of their own: the matrix waits for failed syncs, not for job throughput.
      file: {
        jobs: { concurrency: 8 },
        connectors: { maxAttempts: 1 },
        workers: { publicUrl: 'http://127.0.0.1:9', maxAttempts: 1 },
      },
    })
    try {
      let n = 0
      const standing = new Map<
        MatrixWorld,
        { graph: Graph; workerId: string; discoveryId: string; syncEventId: string; jobId: string }
      >()
      const of = async (w: MatrixWorld) => {
        let s = standing.get(w)
        if (!s) {
          const graph = await buildGraph(w.client, w.org, repo.url, ++n)
          const worker = await w.client.post('/v1/workers', {
            token: w.org.owner.token,
            json: { name: 'standing', provisioner: 'process' },
          })
          const discovery = await w.client.post(`/v1/connector-targets/${graph.targetId}/discovery`, {
            token: w.org.owner.token,
          })
          const sync = await w.client.post(`/v1/connector-targets/${graph.targetId}/sync`, { token: w.org.owner.token })
          await waitFor(
            () => w.client.get(`/v1/connector-sync-events/${sync.body.item.id}`, { token: w.org.owner.token }),
            (r) => r.body.item.status === 'completed',
            10_000,
          )
          s = {
            graph,
            workerId: worker.body.item.id,
            discoveryId: discovery.body.item.id,
            syncEventId: sync.body.item.id,
            jobId: sync.body.item.jobId,
          }
          standing.set(w, s)
        }
        return s
      }
      const fresh = (w: MatrixWorld) => buildGraph(w.client, w.org, repo.url, ++n)
      const REQUESTS: MatrixRequests = {
        listJobs: async () => ({ path: '/v1/jobs?limit=5' }),
        getJob: async (w) => ({ path: `/v1/jobs/${(await of(w)).jobId}` }),
        retryJob: async (w) => ({ path: `/v1/jobs/${(await failedSync(w.client, w.org, missing, ++n)).jobId}/retry` }),
        listWorkers: async () => ({ path: '/v1/workers?limit=50' }),
        createWorker: async () => ({ path: '/v1/workers', json: { name: 'matrix', provisioner: 'process' } }),
        getWorker: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}` }),
        deleteWorker: async (w) => ({
          path: `/v1/workers/${(await w.client.post('/v1/workers', { token: w.org.owner.token, json: { name: 'doomed', provisioner: 'process' } })).body.item.id}`,
        }),
        getWorkerRuntime: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/runtime` }),
        getWorkerLogs: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/logs?tail=5` }),
        listWorkerTokens: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/tokens` }),
        issueWorkerTokens: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/tokens` }),
        revokeWorkerTokens: async (w) => ({
          path: `/v1/workers/${(await w.client.post('/v1/workers', { token: w.org.owner.token, json: { name: 'revoked', provisioner: 'process' } })).body.item.id}/tokens`,
        }),
        getWorkerDelivery: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/delivery` }),
        setWorkerDelivery: async (w) => ({
          path: `/v1/workers/${(await of(w)).workerId}/delivery`,
          json: { hubIds: [], pluginIds: [], llmProviderIds: [] },
        }),
        workerHeartbeat: async (w) => ({ path: `/v1/workers/${(await of(w)).workerId}/heartbeat`, json: {} }),
        listConnectorAccounts: async () => ({ path: '/v1/connector-accounts' }),
        createConnectorAccount: async (w) => ({
          path: '/v1/connector-accounts',
          json: { connectorType: 'github', remoteId: `gh-${w.seq()}`, displayName: 'GH' },
        }),
        getConnectorAccount: async (w) => ({ path: `/v1/connector-accounts/${(await of(w)).graph.accountId}` }),
        updateConnectorAccount: async (w) => ({
          path: `/v1/connector-accounts/${(await of(w)).graph.accountId}`,
          json: { displayName: `renamed ${w.seq()}` },
        }),
        deleteConnectorAccount: async (w) => ({ path: `/v1/connector-accounts/${(await fresh(w)).accountId}` }),
        listConnectorInstances: async () => ({ path: '/v1/connector-instances' }),
        createConnectorInstance: async (w) => ({
          path: '/v1/connector-instances',
          json: { connectorAccountId: (await of(w)).graph.accountId, connectorType: 'git', name: `created ${w.seq()}` },
        }),
        getConnectorInstance: async (w) => ({ path: `/v1/connector-instances/${(await of(w)).graph.instanceId}` }),
        updateConnectorInstance: async (w) => ({
          path: `/v1/connector-instances/${(await of(w)).graph.instanceId}`,
          json: { config: { n: w.seq() } },
        }),
        deleteConnectorInstance: async (w) => ({ path: `/v1/connector-instances/${(await fresh(w)).instanceId}` }),
        listConnectorInstanceAccess: async (w) => ({
          path: `/v1/connector-instances/${(await of(w)).graph.instanceId}/access`,
        }),
        grantConnectorInstanceAccess: async (w) => ({
          path: `/v1/connector-instances/${(await of(w)).graph.instanceId}/access`,
          json: { teamId: w.teamId, role: 'viewer' },
        }),
        revokeConnectorInstanceAccess: async (w) => {
          const g = await fresh(w)
          const grant = await w.client.post(`/v1/connector-instances/${g.instanceId}/access`, {
            token: w.org.owner.token,
            json: { teamId: w.teamId, role: 'viewer' },
          })
          return { path: `/v1/connector-instances/${g.instanceId}/access/${grant.body.item.id}` }
        },
        listConnectorTargets: async (w) => ({
          path: `/v1/connector-instances/${(await of(w)).graph.instanceId}/targets`,
        }),
        createConnectorTarget: async (w) => ({
          path: `/v1/connector-instances/${(await of(w)).graph.instanceId}/targets`,
          json: {
            connectorType: 'git',
            remoteId: `https://git.example/r${w.seq()}.git`,
            targetKind: 'repository_branch',
            config: { branch: 'main' },
          },
        }),
        getConnectorTarget: async (w) => ({ path: `/v1/connector-targets/${(await of(w)).graph.targetId}` }),
        updateConnectorTarget: async (w) => ({
          path: `/v1/connector-targets/${(await of(w)).graph.targetId}`,
          json: { config: {} },
        }),
        deleteConnectorTarget: async (w) => ({ path: `/v1/connector-targets/${(await fresh(w)).targetId}` }),
        listConnectorMappings: async (w) => ({
          path: `/v1/connector-targets/${(await of(w)).graph.targetId}/mappings`,
        }),
        createConnectorMapping: async (w) => ({
          path: `/v1/connector-targets/${(await of(w)).graph.targetId}/mappings`,
          json: { mappingKind: 'path', selector: `c${w.seq()}/*.md`, objectType: 'command' },
        }),
        getConnectorMapping: async (w) => ({ path: `/v1/connector-mappings/${(await of(w)).graph.mappingId}` }),
        updateConnectorMapping: async (w) => ({
          path: `/v1/connector-mappings/${(await of(w)).graph.mappingId}`,
          json: { config: { n: w.seq() } },
        }),
        deleteConnectorMapping: async (w) => ({ path: `/v1/connector-mappings/${(await fresh(w)).mappingId}` }),
        discoverConnectorTarget: async (w) => ({
          path: `/v1/connector-targets/${(await of(w)).graph.targetId}/discovery`,
        }),
        getConnectorDiscovery: async (w) => ({ path: `/v1/connector-discoveries/${(await of(w)).discoveryId}` }),
        syncConnectorTarget: async (w) => ({ path: `/v1/connector-targets/${(await fresh(w)).targetId}/sync` }),
        listConnectorSyncEvents: async () => ({ path: '/v1/connector-sync-events' }),
        getConnectorSyncEvent: async (w) => ({ path: `/v1/connector-sync-events/${(await of(w)).syncEventId}` }),
        retryConnectorSyncEvent: async (w) => ({
          path: `/v1/connector-sync-events/${(await failedSync(w.client, w.org, missing, ++n)).eventId}/retry`,
        }),
      }
      const {
        failures,
        missing: absent,
        checked,
      } = await runRoleMatrix(t as unknown as TestControlPlane, { requests: REQUESTS, tags: TAGS })
      assert.equal(absent, [], 'every route has a matrix entry')
      assert.equal(failures, [])
      const covered = t.app.contract.routes.filter((r) => (r.tags ?? []).some((tag) => TAGS.includes(tag)))
      assert.is(checked, covered.length * MATRIX_CALLERS.length)

      // Isolation: organization A names B's ids on every id-taking route → 404, B unchanged.
      const a = await buildFixtureOrg(t.client, 'iso-a')
      const b = await buildFixtureOrg(t.client, 'iso-b')
      const bWorld = { client: t.client, org: b, other: a, teamId: '', invitationId: '', seq: () => ++n } as MatrixWorld
      const bs = await of(bWorld)
      const bFailed = await failedSync(t.client, b, missing, ++n)
      const grant = await t.client.get(`/v1/connector-instances/${bs.graph.instanceId}/access`, {
        token: b.owner.token,
      })
      // Workers are compared by what A could change (the runtime moves on its own in the background).
      const workers = async () =>
        (await t.client.get('/v1/workers', { token: b.owner.token })).body.items.map((w: Record<string, unknown>) => [
          w.id,
          w.name,
          w.description,
        ])
      const snapshot = async () =>
        JSON.stringify(
          await Promise.all(
            [
              workers(),
              t.client.get(`/v1/workers/${bs.workerId}/tokens`, { token: b.owner.token }).then((r) => r.body),
              t.client.get('/v1/connector-accounts', { token: b.owner.token }),
              t.client.get('/v1/connector-instances', { token: b.owner.token }),
              t.client.get(`/v1/connector-instances/${bs.graph.instanceId}/targets`, { token: b.owner.token }),
              t.client.get(`/v1/connector-targets/${bs.graph.targetId}/mappings`, { token: b.owner.token }),
              t.client.get('/v1/connector-sync-events', { token: b.owner.token }),
              t.client.get(`/v1/jobs/${bFailed.jobId}`, { token: b.owner.token }),
              t.client.get(`/v1/connector-instances/${bs.graph.instanceId}/access`, { token: b.owner.token }),
            ].map(async (p) => {
              const v = await p
              return v && typeof v === 'object' && 'status' in v && 'body' in v ? v.body : v
            }),
          ),
        )
      const before = await snapshot()
      const ids: Record<string, string> = {
        jobId: bFailed.jobId,
        workerId: bs.workerId,
        connectorAccountId: bs.graph.accountId,
        connectorInstanceId: bs.graph.instanceId,
        connectorTargetId: bs.graph.targetId,
        connectorMappingId: bs.graph.mappingId,
        connectorDiscoveryId: bs.discoveryId,
        connectorSyncEventId: bFailed.eventId,
        grantId: grant.body.items[0].id,
      }
      const isolationFailures: string[] = []
      for (const route of covered.filter((r) => r.path.includes(':') && r.auth.kind !== 'workerToken')) {
        const path = route.path.replace(/:(\w+)/g, (_, name: string) => ids[name]!)
        const build = REQUESTS[route.operationId]!
        const body = (
          await build(
            {
              client: t.client,
              org: a,
              other: b,
              teamId: (
                await t.client.post('/v1/teams', { token: a.owner.token, json: { name: `t${++n}` } })
              ).body.item.id,
              invitationId: '',
              seq: () => ++n,
            },
            'owner',
          )
        ).json
        for (const credential of [{ token: a.owner.token }, { apiKey: a.ownerKey.key }]) {
          const res = await t.client.call(route.method, path, {
            ...credential,
            ...(body !== undefined ? { json: body } : {}),
          })
          const expected =
            credential.apiKey && route.auth.kind === 'org' && route.auth.permission === 'workers.tokens' ? 403 : 404
          if (res.status !== expected) isolationFailures.push(`${route.operationId} ${path}: ${res.status}`)
        }
      }
      assert.equal(isolationFailures, [])
      assert.is(await snapshot(), before, "B's state is unchanged")
    } finally {
      await t.close()
    }
  })
})

test.run()
