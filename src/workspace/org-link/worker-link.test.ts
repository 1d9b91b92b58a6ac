/**
 * A workspace server run as a hosted Worker links itself with the provisioner's environment
 * (`SERVICE_CONTROL_PLANE_URL`, `SERVICE_WORKER_ACTIVITY_TOKEN`), no device flow: its first
 * heartbeat goes out only once its delivered set is on disk, changes follow without approval
 * (nobody is there to give it), and its link cannot be removed through the API. The same flow
 * with the real control plane and the process provisioner is in `tests/e2e/worker-org-link.test.ts`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { FAST_LINK, startFakeControlPlane } from '../testing/fake-control-plane.ts'
import { eventually, HOST_TOKEN, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/worker-link', { timeoutMs: 30_000 })

test('a Worker receives its set before its first heartbeat and follows changes without approval', async () => {
  const cp = await startFakeControlPlane()
  cp.acceptToken('wka_worker_token')
  const skill = (body: string) => ({
    objectId: 'obj_w',
    type: 'skill',
    name: 'worker-skill',
    files: [{ path: 'SKILL.md', content: `---\nname: worker-skill\ndescription: w\n---\n${body}\n` }],
  })
  const home = tempDir('svc-worker-home-')
  const provider = {
    objectId: 'llm_1',
    type: 'llm_provider',
    name: 'inhouse',
    config: {
      provider: { inhouse: { npm: '@ai-sdk/openai-compatible', options: { apiKey: 'sk-worker-secret' }, models: {} } },
    },
  }
  cp.deliver([skill('first'), provider])
  cp.deliveryDelayMs = 600
  const s = await startTestServer({
    fixture: false,
    approval: 'manual',
    app: {
      orgLinkTiming: FAST_LINK,
      env: {
        SERVICE_CONTROL_PLANE_URL: cp.url,
        SERVICE_WORKER_ID: 'wrk_test',
        SERVICE_WORKER_ACTIVITY_TOKEN: 'wka_worker_token',
        SERVICE_WORKER_HEARTBEAT_INTERVAL_MS: '100',
        HOME: home.path,
      },
    },
  })
  const file = join(s.root, '.opencode/skills/worker-skill/SKILL.md')
  try {
    s.app.onListening?.({ host: '127.0.0.1', port: 1 })
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.is(cp.heartbeats.length, 0, 'no heartbeat while the set is still being delivered')
    await eventually(() => cp.heartbeats.length > 0, 5000, 'first heartbeat')
    assert.ok(existsSync(file), 'the set is on disk when the Worker reports')
    assert.ok(cp.heartbeats[0]!.deliveryReadsBefore >= 1)
    assert.is(cp.heartbeats[0]!.workerId, 'wrk_test')
    // The provider key: in OpenCode's global config under the Worker's home, owner-only, nowhere else.
    const global = join(home.path, '.config/opencode/opencode.json')
    assert.is(statSync(global).mode & 0o777, 0o600)
    assert.is(JSON.parse(readFileSync(global, 'utf8')).provider.inhouse.options.apiKey, 'sk-worker-secret')
    const view = (await (await s.req(`/workspace/${s.wsId}/org`, { hostToken: HOST_TOKEN })).json()) as Record<
      string,
      any
    >
    assert.is(view.via, 'worker')
    assert.not.match(JSON.stringify(view), /sk-worker-secret/)
    assert.ok(view.delivered.some((d: { type: string }) => d.type === 'llm_provider'))
    cp.deliveryDelayMs = 0
    cp.deliver([skill('second')])
    await eventually(() => !readFileSync(global, 'utf8').includes('sk-worker'), 5000, 'provider withdrawn')
    await eventually(() => readFileSync(file, 'utf8').includes('second'), 5000, 'change followed')
    const approvals = await s.req('/approvals', { hostToken: HOST_TOKEN })
    assert.equal(((await approvals.json()) as { items: unknown[] }).items, [])
    assert.is(view.state, 'in_sync')
    const unlink = await s.req(`/workspace/${s.wsId}/org`, { method: 'DELETE', hostToken: HOST_TOKEN })
    assert.is(unlink.status, 409)
    assert.is(((await unlink.json()) as { code: string }).code, 'org_link_managed')
  } finally {
    await s.dispose()
    await cp.close()
    home.remove()
  }
})

test.run()
