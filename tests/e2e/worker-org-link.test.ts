/**
 * A hosted Worker run by the real control plane's `process` provisioner (the workspace server from
 * source, as a child process) follows its own delivery: the skill of a hub in
 * `PUT /v1/workers/:id/delivery` lands in its workspace within seconds, a new version replaces it,
 * and after its tokens are rotated (a restart with a new activity token) it comes back healthy with
 * the set in place. That healthy waits for the set is shown in `src/workspace/org-link/worker-link.test.ts`.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../harness.ts'
import { startAsyncTestPlane } from '../../src/control-plane/testing/async-test-kit.ts'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'

const test = suite('e2e/worker-org-link', { timeoutMs: 120_000 })

const SKILL = (name: string, body: string) => `---\nname: ${name}\ndescription: The ${name} skill\n---\n\n${body}\n`

async function waitFor<T>(
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (ok(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

test('a process Worker receives its delivered skill, follows a new version, and is healthy with its set after a restart', async () => {
  const t = await startAsyncTestPlane({ listen: true })
  try {
    const org = await buildFixtureOrg(t.client, 'wlink')
    const owner = org.owner.token
    const skill = (await t.client.post('/v1/skills', { token: owner, json: { skillMd: SKILL('triage', 'v1') } })).body
      .item.id as string
    const hub = (await t.client.post('/v1/skill-hubs', { token: owner, json: { name: 'Ops' } })).body.item.id as string
    await t.client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: skill } })
    const created = await t.client.post('/v1/workers', {
      token: owner,
      json: { name: 'runner', provisioner: 'process' },
    })
    assert.is(created.status, 202)
    const id = created.body.item.id as string
    const state = () => t.client.get(`/v1/workers/${id}`, { token: owner })
    await waitFor(state, (r) => r.body.item.state === 'healthy', 'healthy with an empty set')
    const file = join(t.dir, 'data', 'workers', id, 'workspace', '.opencode/skills/triage/SKILL.md')
    assert.not.ok(existsSync(file))

    const provider = await t.client.post('/v1/llm-providers', {
      token: owner,
      json: {
        name: 'inhouse',
        custom: { baseUrl: 'https://llm.example/v1', api: 'openai-compatible' },
        models: ['small'],
        apiKey: 'sk-e2e-provider-key',
      },
    })
    assert.is(provider.status, 201)
    const set = await t.client.put(`/v1/workers/${id}/delivery`, {
      token: owner,
      json: { hubIds: [hub], pluginIds: [], llmProviderIds: [provider.body.item.id] },
    })
    assert.is(set.status, 200)
    await waitFor(async () => existsSync(file), Boolean, 'the delivered skill on disk')
    // The provider key lands in OpenCode's global config under the Worker's home, owner-only.
    const global = join(t.dir, 'data', 'workers', id, '.config', 'opencode', 'opencode.json')
    await waitFor(async () => existsSync(global), Boolean, 'the provider config')
    assert.is(statSync(global).mode & 0o777, 0o600)
    assert.is(JSON.parse(readFileSync(global, 'utf8')).provider.inhouse.options.apiKey, 'sk-e2e-provider-key')
    assert.match(readFileSync(file, 'utf8'), /v1/)

    const version = await t.client.post(`/v1/config-objects/${skill}/versions`, {
      token: owner,
      json: { input: { rawSourceText: SKILL('triage', 'v2') } },
    })
    assert.is(version.status, 201, JSON.stringify(version.body))
    await waitFor(async () => readFileSync(file, 'utf8').includes('v2'), Boolean, 'the new version on disk')

    // New tokens restart the runtime with a new activity token; it links again and reports healthy.
    const issued = await t.client.post(`/v1/workers/${id}/tokens`, { token: owner })
    assert.is(issued.status, 201)
    await waitFor(state, (r) => r.body.item.state === 'healthy', 'healthy after the restart')
    assert.match(readFileSync(file, 'utf8'), /v2/)
    const { host } = issued.body.item.tokens as { host: string }
    const runtime = (await t.client.get(`/v1/workers/${id}/runtime`, { token: owner })).body.item as { url: string }
    const view = await (
      await fetch(`${runtime.url}/workspace/${await firstWorkspace(runtime.url, issued.body.item.tokens.client)}/org`, {
        headers: { 'x-service-host-token': host },
      })
    ).json()
    assert.is(view.via, 'worker')
    assert.not.match(JSON.stringify(view), /sk-e2e-provider-key/)
    assert.is(view.state, 'in_sync')
    assert.equal(
      view.delivered.map((d: { name: string }) => d.name),
      ['inhouse', 'triage'],
    )
  } finally {
    const rows = await t.app.deps.db.selectFrom('worker').select('runtime_pid').execute()
    await t.close()
    for (const pid of rows.map((r) => r.runtime_pid)) {
      try {
        if (pid) process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  }
})

async function firstWorkspace(url: string, client: string): Promise<string> {
  const r = await fetch(`${url}/workspaces`, { headers: { authorization: `Bearer ${client}` } })
  return ((await r.json()) as { items: Array<{ id: string }> }).items[0]!.id
}

test.run()
