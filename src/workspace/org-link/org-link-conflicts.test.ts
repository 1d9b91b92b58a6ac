/**
 * What a linked workspace writes and what it refuses to overwrite, driven change set by change
 * set through a control plane the test controls over real HTTP: executable bits, commands and MCP
 * entries on disk; conflicts on a local edit, a same-name local skill and a same-name MCP entry,
 * resolved both ways; manual approval (one request per change set, with the diff); unlink
 * keeping the files; the host CLI waiting for the approval.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { assert, suite } from '../../../tests/harness.ts'
import { serve } from '../../serve.ts'
import {
  FAST_LINK,
  startFakeControlPlane,
  type FakeControlPlane,
  type FakeItem,
} from '../testing/fake-control-plane.ts'
import { CLIENT_TOKEN, eventually, HOST_TOKEN, startTestServer, type TestServer } from '../testing/test-kit.ts'
import { runOrgCli } from './org-cli.ts'

const test = suite('workspace/org-link-conflicts', { timeoutMs: 30_000 })

const skill = (name: string, body = 'Use it.', extra: FakeItem['files'] = []): FakeItem => ({
  objectId: `obj_${name}`,
  type: 'skill',
  name,
  files: [{ path: 'SKILL.md', content: `---\nname: ${name}\ndescription: ${name} skill\n---\n${body}\n` }, ...extra],
})

async function org(s: TestServer) {
  const r = await s.req(`/workspace/${s.wsId}/org`, { hostToken: HOST_TOKEN })
  return (await r.json()) as Record<string, any>
}

async function post(s: TestServer, path: string, json?: unknown) {
  const r = await s.req(`/workspace/${s.wsId}/org${path}`, { method: 'POST', hostToken: HOST_TOKEN, json })
  return { status: r.status, body: (await r.json()) as Record<string, any> }
}

async function setup(approval: 'auto' | 'manual' = 'auto') {
  const cp = await startFakeControlPlane()
  const s = await startTestServer({ fixture: false, approval, app: { orgLinkTiming: FAST_LINK } })
  const started = await post(s, '/link', { controlPlaneUrl: cp.url })
  assert.is(started.status, 202)
  cp.approve(started.body.userCode)
  await eventually(async () => (await org(s)).state !== 'linking', 5000, 'linked')
  return { cp, s }
}

async function run(fn: (s: TestServer, cp: FakeControlPlane) => Promise<void>, approval: 'auto' | 'manual' = 'auto') {
  const { cp, s } = await setup(approval)
  try {
    await fn(s, cp)
  } finally {
    await s.dispose()
    await cp.close()
  }
}

test('delivered skills keep executable bits, commands and MCP entries land where OpenCode reads them', async () => {
  await run(async (s, cp) => {
    cp.deliver([
      skill('deploy', 'Run scripts/go.sh', [
        { path: 'scripts/go.sh', content: '#!/bin/sh\necho go\n', executable: true },
      ]),
      {
        objectId: 'obj_cmd',
        type: 'command',
        name: 'review',
        files: [{ path: 'review.md', content: 'Review $ARGUMENTS\n' }],
      },
      {
        objectId: 'obj_mcp',
        type: 'mcp',
        name: 'docs',
        config: { mcp: { docs: { type: 'remote', url: 'https://mcp.example/docs' } } },
      },
      {
        objectId: 'obj_ctx',
        type: 'context',
        name: 'style',
        files: [{ path: 'style.md', content: 'Write short sentences.\n' }],
        config: { instructions: ['.opencode/context/style.md'] },
      },
      {
        objectId: 'obj_tool',
        type: 'tool',
        name: 'lookup',
        files: [{ path: 'lookup.ts', content: 'export default {}\n' }],
      },
      {
        objectId: 'obj_hook',
        type: 'hook',
        name: 'audit',
        files: [{ path: 'audit.js', content: 'export const x = 1\n' }],
      },
      { objectId: 'obj_custom', type: 'custom', name: 'note' },
    ])
    await eventually(async () => (await org(s)).delivered.length === 6, 5000, 'delivered')
    assert.ok(existsSync(join(s.root, '.opencode/tools/lookup.ts')))
    assert.ok(existsSync(join(s.root, '.opencode/plugins/audit.js')))
    assert.is(readFileSync(join(s.root, '.opencode/context/style.md'), 'utf8'), 'Write short sentences.\n')
    const script = join(s.root, '.opencode/skills/deploy/scripts/go.sh')
    assert.ok((statSync(script).mode & 0o111) !== 0, 'script is executable')
    assert.is(statSync(join(s.root, '.opencode/skills/deploy/SKILL.md')).mode & 0o111, 0)
    assert.is(readFileSync(join(s.root, '.opencode/commands/review.md'), 'utf8'), 'Review $ARGUMENTS\n')
    const config = JSON.parse(readFileSync(join(s.root, 'opencode.json'), 'utf8'))
    assert.equal(config.mcp.docs, { type: 'remote', url: 'https://mcp.example/docs' })
    assert.equal(config.instructions, ['.opencode/context/style.md'])
    const view = await eventually(async () => {
      const v = await org(s)
      return v.state === 'in_sync' ? v : undefined
    }, 3000)
    assert.is(view.organization.name, 'Acme')
    const deploy = view.delivered.find((d: any) => d.name === 'deploy')
    assert.equal(deploy.files, ['.opencode/skills/deploy/SKILL.md', '.opencode/skills/deploy/scripts/go.sh'])
    // The workspace's own MCP list shows the delivered entry, and the change set is an event.
    const mcp = await s.req(`/workspace/${s.wsId}/mcp`, { token: CLIENT_TOKEN })
    assert.match(await mcp.text(), /docs/)
    const types = await eventually(async () => {
      const events = await s.req(`/workspace/${s.wsId}/events?since=0`, { token: CLIENT_TOKEN })
      const list = ((await events.json()) as { items: Array<{ type: string }> }).items.map((e) => e.type)
      return list.includes('org.applied') ? list : undefined
    }, 3000)
    assert.ok(types.includes('org.state'))
    // Removing it from the set removes the files and the entry.
    cp.deliver([])
    await eventually(async () => (await org(s)).delivered.length === 0, 5000, 'removed')
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/deploy')))
    assert.not.ok(existsSync(join(s.root, '.opencode/commands/review.md')))
    const after = JSON.parse(readFileSync(join(s.root, 'opencode.json'), 'utf8'))
    assert.is(after.mcp.docs, undefined)
    assert.is(after.instructions, undefined)
    assert.not.ok(existsSync(join(s.root, '.opencode/tools/lookup.ts')))
    assert.not.ok(existsSync(join(s.root, '.opencode/context/style.md')))
  })
})

test('a managed file edited locally is a conflict, kept as it is, and resolvable both ways', async () => {
  await run(async (s, cp) => {
    cp.deliver([skill('notes', 'v1')])
    const file = join(s.root, '.opencode/skills/notes/SKILL.md')
    await eventually(() => existsSync(file), 5000)
    writeFileSync(file, 'my edit\n')
    cp.deliver([skill('notes', 'v2')])
    const view = await eventually(async () => {
      const v = await org(s)
      return v.state === 'conflict' ? v : undefined
    }, 5000)
    assert.is(readFileSync(file, 'utf8'), 'my edit\n', 'never overwritten')
    const [conflict] = view.conflicts
    assert.is(conflict.path, '.opencode/skills/notes/SKILL.md')
    assert.is(conflict.reason, 'edited_locally')
    assert.is(conflict.localSha256.length, 64)
    assert.is(conflict.organizationSha256.length, 64)
    // Keep local: no conflict, content stays, even after a reconcile of the same version.
    const kept = await post(s, '/conflicts/resolve', { path: conflict.path, take: 'local' })
    assert.is(kept.status, 200)
    assert.is(kept.body.state, 'in_sync')
    assert.is((await post(s, '/sync')).body.state, 'in_sync')
    assert.is(readFileSync(file, 'utf8'), 'my edit\n')
    // A new version asks again; taking the organization's writes it.
    cp.deliver([skill('notes', 'v3')])
    await eventually(async () => (await org(s)).state === 'conflict', 5000, 'asked again')
    const taken = await post(s, '/conflicts/resolve', { path: conflict.path, take: 'organization' })
    assert.is(taken.body.state, 'in_sync')
    assert.match(readFileSync(file, 'utf8'), /v3/)
    const missing = await post(s, '/conflicts/resolve', { path: 'nope', take: 'local' })
    assert.is(missing.status, 404)
    assert.is(missing.body.code, 'org_conflict_not_found')
  })
})

test("a local skill or MCP entry of the same name is a conflict; taking the organization's replaces the folder", async () => {
  await run(async (s, cp) => {
    mkdirSync(join(s.root, '.opencode/skills/lint/extra'), { recursive: true })
    writeFileSync(join(s.root, '.opencode/skills/lint/SKILL.md'), '---\nname: lint\ndescription: mine\n---\nmine\n')
    writeFileSync(join(s.root, '.opencode/skills/lint/extra/notes.txt'), 'local only\n')
    writeFileSync(
      join(s.root, 'opencode.json'),
      JSON.stringify({ mcp: { docs: { type: 'remote', url: 'https://mine' } } }),
    )
    cp.deliver([
      skill('lint', 'org lint'),
      {
        objectId: 'obj_mcp',
        type: 'mcp',
        name: 'docs',
        config: { mcp: { docs: { type: 'remote', url: 'https://org' } } },
      },
    ])
    const view = await eventually(async () => {
      const v = await org(s)
      return v.conflicts.length === 2 ? v : undefined
    }, 5000)
    const reasons = Object.fromEntries(view.conflicts.map((c: any) => [c.path, c.reason]))
    assert.equal(reasons, { '.opencode/skills/lint': 'local_skill', 'mcp/docs': 'local_mcp' })
    assert.match(readFileSync(join(s.root, '.opencode/skills/lint/SKILL.md'), 'utf8'), /mine/)
    assert.match(readFileSync(join(s.root, 'opencode.json'), 'utf8'), /https:\/\/mine/)
    await post(s, '/conflicts/resolve', { path: 'mcp/docs', take: 'local' })
    const taken = await post(s, '/conflicts/resolve', { path: '.opencode/skills/lint', take: 'organization' })
    assert.is(taken.body.state, 'in_sync')
    assert.match(readFileSync(join(s.root, '.opencode/skills/lint/SKILL.md'), 'utf8'), /org lint/)
    assert.not.ok(
      existsSync(join(s.root, '.opencode/skills/lint/extra/notes.txt')),
      'the folder is the delivered skill',
    )
    assert.match(readFileSync(join(s.root, 'opencode.json'), 'utf8'), /https:\/\/mine/)
  })
})

test('in manual mode each change set is one approval with its diff; a denial writes nothing until asked again', async () => {
  await run(async (s, cp) => {
    cp.deliver([skill('a'), skill('b')])
    const first = await eventually(async () => {
      const r = await s.req('/approvals', { hostToken: HOST_TOKEN })
      const items = ((await r.json()) as { items: any[] }).items
      return items.length ? items : undefined
    }, 5000)
    assert.is(first.length, 1, 'one approval for the change set')
    assert.is(first[0].action, 'org.apply')
    assert.equal(first[0].changes.map((c: any) => c.path).sort(), [
      '.opencode/skills/a/SKILL.md',
      '.opencode/skills/b/SKILL.md',
    ])
    assert.match(first[0].changes[0].diff, /\+name: /)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/a')))
    await s.req(`/approvals/${first[0].id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'deny' } })
    await eventually(async () => (await org(s)).lastError?.code === 'write_denied', 5000)
    assert.not.ok(existsSync(join(s.root, '.opencode/skills/a')))
    const again = post(s, '/sync')
    const second = await eventually(async () => {
      const r = await s.req('/approvals', { hostToken: HOST_TOKEN })
      return ((await r.json()) as { items: any[] }).items[0]
    }, 5000)
    await s.req(`/approvals/${second.id}`, { method: 'POST', hostToken: HOST_TOKEN, json: { reply: 'allow' } })
    assert.is((await again).body.state, 'in_sync')
    assert.ok(existsSync(join(s.root, '.opencode/skills/b/SKILL.md')))
  }, 'manual')
})

test('unlink without remove keeps the delivered files and forgets the link', async () => {
  await run(async (s, cp) => {
    cp.deliver([skill('stays')])
    await eventually(() => existsSync(join(s.root, '.opencode/skills/stays/SKILL.md')), 5000)
    const r = await s.req(`/workspace/${s.wsId}/org`, { method: 'DELETE', hostToken: HOST_TOKEN })
    assert.equal(await r.json(), { ok: true, removed: 0 })
    assert.ok(existsSync(join(s.root, '.opencode/skills/stays/SKILL.md')))
    const gone = await s.req(`/workspace/${s.wsId}/org`, { hostToken: HOST_TOKEN })
    assert.is(gone.status, 404)
    assert.not.ok(existsSync(join(s.dir, 'data', 'org-link', `${s.wsId}.json`)))
    // Non-host callers never see the link.
    const viewer = await s.req(`/workspace/${s.wsId}/org`, { token: CLIENT_TOKEN })
    assert.is(viewer.status, 403)
  })
})

test('service-server org link prints the code, waits for the approval and reports the organization', async () => {
  const cp = await startFakeControlPlane()
  const s = await startTestServer({ fixture: false, app: { orgLinkTiming: FAST_LINK } })
  const listener = await serve({ host: '127.0.0.1', port: 0, fetch: s.app.fetch })
  try {
    const out: string[] = []
    const err: string[] = []
    const code = await runOrgCli(['org', 'link', cp.url, '--url', `http://127.0.0.1:${listener.port}`], {
      env: { SERVICE_HOST_TOKEN: HOST_TOKEN, SERVICE_TOKEN: CLIENT_TOKEN },
      cwd: s.dir,
      stdout: (l) => out.push(l),
      stderr: (l) => {
        err.push(l)
        const match = /enter the code: (\S+)/.exec(l)
        if (match) cp.approve(match[1]!)
      },
      pollMs: 50,
    })
    assert.is(code, 0, err.join('\n'))
    assert.match(err.join('\n'), /open http:\/\/127\.0\.0\.1:\d+\/device\?user_code=/)
    assert.match(out.join('\n'), /linked to Acme/)
    assert.not.match(out.join('\n') + err.join('\n'), /oat_|ort_/)
    const bad = await runOrgCli(['org', 'link'], { env: {}, cwd: s.dir, stdout: () => {}, stderr: () => {} })
    assert.is(bad, 2)
  } finally {
    await listener.stop()
    await s.dispose()
    await cp.close()
  }
})

test.run()
