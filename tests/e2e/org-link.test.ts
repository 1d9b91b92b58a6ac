/**
 * A workspace linked to a real control plane over HTTP (both surfaces in this process, each on its
 * own loopback port): the device flow approved through the control plane's API by the member, the
 * initial sync of the hub assigned to them, a new version on disk within seconds, a restart that
 * resumes from the persisted feed position, conflicts with a local skill and a local edit resolved
 * both ways, manual approval, the control plane going away and coming back on the same port, and
 * the member's removal turning the link `revoked` with the files kept until the host unlinks.
 * Hostile answers are in `src/workspace/org-link/org-link-faults.test.ts` (a control plane the
 * test controls).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../harness.ts'
import { silentLogger } from '../../src/core/logger.ts'
import { serve, type Listener } from '../../src/serve.ts'
import { createControlPlaneApp, type ControlPlaneApp } from '../../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../../src/control-plane/config.ts'
import { contractClient, type ContractClient } from '../../src/control-plane/testing/contract-client.ts'
import { buildFixtureOrg, type FixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from '../../src/control-plane/testing/test-database.ts'
import { eventually, HOST_TOKEN, startTestServer, type TestServer } from '../../src/workspace/testing/test-kit.ts'

const test = suite('e2e/org-link', { timeoutMs: 90_000 })

/** Retry timing for a link against a plane that goes away; the device poll follows the plane's 1 s interval. */
const TIMING = {
  backoffInitialMs: 50,
  backoffMaxMs: 500,
  client: { requestTimeoutMs: 5000, idleTimeoutMs: 30_000, maxDeliveryBytes: 64 * 1024 * 1024, maxSmallBytes: 65_536 },
}

const SKILL = (name: string, body: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\n${body}\n`

interface Plane {
  app: ControlPlaneApp
  client: ContractClient
  url: string
  org: FixtureOrg
  /** Stops listening; `up()` listens again on the same port. */
  down(): Promise<void>
  up(): Promise<void>
  close(): Promise<void>
}

/** A control plane on a real clock with a 1 s device-poll interval, listening on loopback. */
async function startPlane(label: string): Promise<Plane> {
  const dir = tempDir('svc-e2e-link-cp-')
  const base = loadControlPlaneConfig({}, {}, dir.path)
  const config = {
    ...base,
    dataDir: join(dir.path, 'data'),
    databasePath: join(dir.path, 'control-plane.sqlite'),
    logRequests: false,
    openSignUp: true,
    file: { ...base.file, oauth: { deviceIntervalSeconds: 1 } },
  }
  const postgres = TEST_ENGINE === 'postgres'
  if (postgres) config.databaseUrl = await testDatabaseUrl(dir.path)
  const app = await createControlPlaneApp(config, { logger: silentLogger, scrypt: { N: 2 ** 10, r: 8, p: 1 } })
  let listener: Listener | null = await serve({ host: '127.0.0.1', port: 0, fetch: app.fetch })
  const port = listener.port
  const client = contractClient(app)
  const org = await buildFixtureOrg(client, label)
  return {
    app,
    client,
    url: `http://127.0.0.1:${port}`,
    org,
    async down() {
      await listener?.stop()
      listener = null
    },
    async up() {
      listener ??= await serve({ host: '127.0.0.1', port, fetch: app.fetch })
    },
    async close() {
      await listener?.stop()
      await app.close()
      if (postgres) await dropTestDatabase(dir.path)
      dir.remove()
    },
  }
}

/** A skill in a hub assigned to the fixture's member; returns the skill's object id. */
async function deliverSkill(plane: Plane, name: string, body: string): Promise<string> {
  const owner = plane.org.owner.token
  const skill = await plane.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL(name, body) } })
  assert.is(skill.status, 201, JSON.stringify(skill.body))
  const hub = await plane.client.post('/v1/skill-hubs', { token: owner, json: { name: `hub ${name}` } })
  await plane.client.post(`/v1/skill-hubs/${hub.body.item.id}/skills`, {
    token: owner,
    json: { skillId: skill.body.item.id },
  })
  const assigned = await plane.client.post(`/v1/skill-hubs/${hub.body.item.id}/assignments`, {
    token: owner,
    json: { memberId: plane.org.member.memberId },
  })
  assert.is(assigned.status, 201, JSON.stringify(assigned.body))
  return skill.body.item.id as string
}

async function publish(plane: Plane, skillId: string, name: string, body: string): Promise<void> {
  const version = await plane.client.post(`/v1/config-objects/${skillId}/versions`, {
    token: plane.org.owner.token,
    json: { input: { rawSourceText: SKILL(name, body) } },
  })
  assert.is(version.status, 201, JSON.stringify(version.body))
}

async function view(s: TestServer): Promise<Record<string, any>> {
  const r = await s.req(`/workspace/${s.wsId}/org`, { hostToken: HOST_TOKEN })
  return { status: r.status, ...((await r.json()) as Record<string, any>) }
}

/** Links the workspace: the member approves the code through the control plane's API. */
async function link(s: TestServer, plane: Plane): Promise<void> {
  const started = await s.req(`/workspace/${s.wsId}/org/link`, {
    method: 'POST',
    hostToken: HOST_TOKEN,
    json: { controlPlaneUrl: plane.url },
  })
  assert.is(started.status, 202)
  const { userCode } = (await started.json()) as { userCode: string }
  const approved = await plane.client.post('/v1/oauth/device/approve', {
    token: plane.org.member.token,
    json: { userCode },
  })
  assert.is(approved.status, 200, JSON.stringify(approved.body))
  await eventually(async () => !['linking', 'syncing'].includes((await view(s)).state), 15_000, 'linked')
}

test('linked by the device flow, a workspace receives its hub, follows new versions within seconds, and resumes after a restart', async () => {
  const plane = await startPlane('elink')
  let s = await startTestServer({ fixture: false, app: { orgLinkTiming: TIMING } })
  try {
    const skillId = await deliverSkill(plane, 'deploy', 'v1')
    await link(s, plane)
    const linked = await view(s)
    assert.is(linked.state, 'in_sync')
    assert.is(linked.organization.id, plane.org.orgId)
    assert.is(linked.member.memberId, plane.org.member.memberId)
    assert.equal(
      linked.delivered.map((d: { name: string }) => d.name),
      ['deploy'],
    )
    const file = join(s.root, '.opencode/skills/deploy/SKILL.md')
    assert.match(readFileSync(file, 'utf8'), /v1/)
    // No token anywhere the host can read.
    assert.not.match(JSON.stringify(linked), /oat_|ort_/)

    const t0 = Date.now()
    await publish(plane, skillId, 'deploy', 'v2')
    await eventually(() => readFileSync(file, 'utf8').includes('v2'), 10_000, 'v2 on disk')
    assert.ok(Date.now() - t0 < 5000, `a new version took ${Date.now() - t0} ms`)

    // Restart: the link resumes from its saved feed position and keeps following.
    s = await s.restart()
    await eventually(async () => (await view(s)).state === 'in_sync', 10_000, 'in sync after restart')
    await publish(plane, skillId, 'deploy', 'v3')
    await eventually(() => readFileSync(file, 'utf8').includes('v3'), 10_000, 'v3 on disk after restart')
    // The feed position is saved a moment after each event (batched), so wait for it.
    const saved = () => JSON.parse(readFileSync(join(s.dir, 'data', 'org-link', `${s.wsId}.json`), 'utf8'))
    await eventually(() => /^\d+$/.test(String(saved().lastEventId)), 5_000, 'the feed position saved')
  } finally {
    await s.dispose()
    await plane.close()
  }
})

test('a local skill of the same name and a local edit are conflicts, resolved both ways against the real control plane', async () => {
  const plane = await startPlane('econf')
  const s = await startTestServer({ fixture: false, app: { orgLinkTiming: TIMING } })
  try {
    mkdirSync(join(s.root, '.opencode/skills/review'), { recursive: true })
    const file = join(s.root, '.opencode/skills/review/SKILL.md')
    writeFileSync(file, SKILL('review', 'my own review'))
    const skillId = await deliverSkill(plane, 'review', 'org review v1')
    await link(s, plane)
    const first = await view(s)
    assert.is(first.state, 'conflict')
    assert.is(first.conflicts[0].reason, 'local_skill')
    assert.match(readFileSync(file, 'utf8'), /my own review/)
    const take = async (path: string, choice: 'local' | 'organization') =>
      (
        await s.req(`/workspace/${s.wsId}/org/conflicts/resolve`, {
          method: 'POST',
          hostToken: HOST_TOKEN,
          json: { path, take: choice },
        })
      ).json() as Promise<Record<string, any>>
    assert.is((await take('.opencode/skills/review', 'organization')).state, 'in_sync')
    assert.match(readFileSync(file, 'utf8'), /org review v1/)

    writeFileSync(file, SKILL('review', 'edited here'))
    await publish(plane, skillId, 'review', 'org review v2')
    await eventually(async () => (await view(s)).state === 'conflict', 10_000, 'edit conflict')
    assert.is((await view(s)).conflicts[0].reason, 'edited_locally')
    assert.is((await take('.opencode/skills/review/SKILL.md', 'local')).state, 'in_sync')
    assert.match(readFileSync(file, 'utf8'), /edited here/)
  } finally {
    await s.dispose()
    await plane.close()
  }
})

test('in manual mode the first change set waits for one approval with its diff', async () => {
  const plane = await startPlane('emanual')
  const s = await startTestServer({ fixture: false, approval: 'manual', app: { orgLinkTiming: TIMING } })
  try {
    await deliverSkill(plane, 'notes', 'manual v1')
    const started = await s.req(`/workspace/${s.wsId}/org/link`, {
      method: 'POST',
      hostToken: HOST_TOKEN,
      json: { controlPlaneUrl: plane.url },
    })
    const { userCode } = (await started.json()) as { userCode: string }
    await plane.client.post('/v1/oauth/device/approve', { token: plane.org.member.token, json: { userCode } })
    const approval = await eventually(async () => {
      const r = await s.req('/approvals', { hostToken: HOST_TOKEN })
      return ((await r.json()) as { items: Array<Record<string, any>> }).items[0]
    }, 15_000)
    assert.is(approval.action, 'org.apply')
    assert.equal(
      approval.changes.map((c: { path: string }) => c.path),
      ['.opencode/skills/notes/SKILL.md'],
    )
    assert.match(approval.changes[0].diff, /\+manual v1/)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/notes')))
    await s.req(`/approvals/${approval.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    await eventually(() => existsSync(join(s.root, '.opencode/skills/notes/SKILL.md')), 10_000, 'applied')
  } finally {
    await s.dispose()
    await plane.close()
  }
})

test('an unreachable control plane removes nothing; removing the member revokes the link and unlink removes the files', async () => {
  const plane = await startPlane('erevoke')
  const s = await startTestServer({ fixture: false, app: { orgLinkTiming: TIMING } })
  try {
    const skillId = await deliverSkill(plane, 'ops', 'v1')
    await link(s, plane)
    const file = join(s.root, '.opencode/skills/ops/SKILL.md')
    assert.ok(existsSync(file))

    await plane.down()
    await eventually(async () => (await view(s)).state === 'unreachable', 15_000, 'unreachable')
    assert.ok(existsSync(file), 'nothing removed while unreachable')
    await publish(plane, skillId, 'ops', 'v2')
    await plane.up()
    // Back on the same port: the link reconnects and reconciles the change it missed.
    await eventually(() => readFileSync(file, 'utf8').includes('v2'), 15_000, 'caught up after the outage')
    await eventually(async () => (await view(s)).state === 'in_sync', 5000)

    const removed = await plane.client.delete(`/v1/members/${plane.org.member.memberId}`, {
      token: plane.org.owner.token,
    })
    assert.ok(removed.status < 300, JSON.stringify(removed.body))
    await eventually(async () => (await view(s)).state === 'revoked', 15_000, 'revoked')
    assert.ok(existsSync(file), 'files stay while revoked')
    const unlinked = await s.req(`/workspace/${s.wsId}/org?remove=true`, { method: 'DELETE', hostToken: HOST_TOKEN })
    assert.equal(await unlinked.json(), { ok: true, removed: 1 })
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/ops')))
  } finally {
    await s.dispose()
    await plane.close()
  }
})

test.run()
