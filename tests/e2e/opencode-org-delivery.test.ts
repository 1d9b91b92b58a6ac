/**
 * Stock OpenCode (the real binary, npm `opencode-ai`) takes an organization's configuration from
 * the control plane with its own protocol: `opencode auth login <url>` runs the device sign-in the
 * well-known document names (approved here through the API, as a person in a browser would), then
 * every start reads the remote config and the skills behind its capability URL. After a new
 * version a new start has the new content; after the member is removed OpenCode still starts and
 * delivers nothing of the organization.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startAsyncTestPlane } from '../../src/control-plane/testing/async-test-kit.ts'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { isolatedOpencodeEnv, OPENCODE_BIN } from '../../src/workspace/sidecar/opencode-env.ts'
import { assert, suite, tempDir } from '../harness.ts'

const test = suite('e2e/opencode organization delivery', { timeoutMs: 240_000 })

const SKILL = (body: string) => `---\nname: ship\ndescription: Ships a release\n---\n\n${body}\n`

type Run = { code: number | null; stdout: string; stderr: string }

/** Runs OpenCode in `project` with an isolated home; `onStderr` sees stderr as it grows. */
function opencode(args: string[], project: string, home: string, onStderr?: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(OPENCODE_BIN, args, {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', ...isolatedOpencodeEnv(home) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => {
      stderr += chunk
      onStderr?.(stderr)
    })
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

test('opencode auth login signs in to the organization; OpenCode then loads its MCP entry, command, instruction and skill, follows a new version, and still starts once the member is removed', async () => {
  const dir = tempDir('svc-opencode-org-')
  const t = await startAsyncTestPlane({ listen: true })
  try {
    const url = t.url!
    const org = await buildFixtureOrg(t.client, 'ocdeliv')
    const admin = org.admin.token
    const make = async (type: string, title: string, input: Record<string, unknown>) =>
      (await t.client.post('/v1/config-objects', { token: admin, json: { type, sourceMode: 'cloud', title, input } }))
        .body.item.id as string
    const skill = (
      await t.client.post('/v1/skills', {
        token: admin,
        json: {
          skillMd: SKILL('Ship it once.'),
          files: [{ path: 'checklist.md', contentBase64: btoa('- tests pass\n'), executable: false }],
        },
      })
    ).body.item.id as string
    const plugin = (await t.client.post('/v1/plugins', { token: admin, json: { name: 'Release kit' } })).body.item.id
    const objects = [
      await make('mcp', 'Tracker', { normalizedPayload: { type: 'remote', url: 'https://mcp.example/tracker' } }),
      await make('command', 'Release', {
        rawSourceText: '---\ndescription: Cut a release\n---\nCut release $ARGUMENTS',
      }),
      await make('context', 'House style', { normalizedPayload: { content: 'Prefer short functions.' } }),
      skill,
    ]
    for (const id of objects)
      await t.client.post(`/v1/plugins/${plugin}/config-objects`, { token: admin, json: { configObjectId: id } })
    await t.client.post(`/v1/plugins/${plugin}/assignments`, { token: admin, json: { orgWide: true } })

    const home = join(dir.path, 'home')
    const project = join(dir.path, 'project')
    mkdirSync(project, { recursive: true })
    // The sign-in: the command prints the code on stderr; the member approves it in the API.
    let approval: Promise<number> | null = null
    const login = await opencode(['auth', 'login', url], project, home, (stderr) => {
      const code = /confirm the code ([A-Z]{4}-[A-Z]{4})/.exec(stderr)?.[1]
      if (code && !approval)
        approval = t.client
          .post('/v1/oauth/device/approve', { token: org.member.token, json: { userCode: code } })
          .then((r) => r.status)
    })
    assert.is(login.code, 0, login.stderr)
    assert.is(await approval, 200, 'the code was shown and approved')
    assert.match(login.stderr, /Signed in to Org ocdeliv/)

    const config = await opencode(['debug', 'config'], project, home)
    assert.is(config.code, 0, config.stderr)
    const loaded = JSON.parse(config.stdout)
    assert.equal(loaded.mcp.tracker, { type: 'remote', url: 'https://mcp.example/tracker' })
    assert.equal(loaded.command.release, { description: 'Cut a release', template: 'Cut release $ARGUMENTS' })
    assert.is(loaded.instructions.length, 1)
    const instruction = await fetch(loaded.instructions[0])
    assert.equal([instruction.status, await instruction.text()], [200, 'Prefer short functions.\n'])

    const skills = async () => {
      const run = await opencode(['debug', 'skill'], project, home)
      assert.is(run.code, 0, run.stderr)
      return JSON.parse(run.stdout) as Array<{ name: string; location: string; content: string }>
    }
    const first = (await skills()).find((s) => s.name === 'ship')
    assert.ok(first, 'OpenCode lists the delivered skill')
    const folder = join(first!.location, '..')
    assert.ok(first!.location.startsWith(join(home, '.cache')), first!.location)
    assert.match(readFileSync(join(folder, 'SKILL.md'), 'utf8'), /Ship it once\./)
    assert.is(readFileSync(join(folder, 'checklist.md'), 'utf8'), '- tests pass\n')

    // A new version: the next OpenCode start has the new content.
    const version = await t.client.post(`/v1/config-objects/${skill}/versions`, {
      token: admin,
      json: { input: { rawSourceText: SKILL('Ship it twice.') } },
    })
    assert.is(version.status, 201)
    const second = (await skills()).find((s) => s.name === 'ship')
    assert.match(readFileSync(join(second!.location, '..', 'SKILL.md'), 'utf8'), /Ship it twice\./)

    // The member leaves: OpenCode still starts, with nothing of the organization.
    assert.is((await t.client.delete(`/v1/members/${org.member.memberId}`, { token: org.owner.token })).status, 204)
    const after = await opencode(['debug', 'config'], project, home)
    assert.is(after.code, 0, after.stderr)
    const left = JSON.parse(after.stdout)
    assert.is(left.mcp?.tracker, undefined)
    assert.is(left.command?.release, undefined)
    assert.is(left.skills, undefined)
    assert.is(left.instructions.length, 1)
    const notice = await (await fetch(left.instructions[0])).text()
    assert.ok(notice.includes(`opencode auth logout ${url}`), notice)
    const gone = await fetch(`${loaded.skills.urls[0]}index.json`)
    assert.is(gone.status, 404, 'the capability URL ended with the membership')
    assert.ok(existsSync(join(folder, 'SKILL.md')), 'OpenCode keeps what it cached (its own behaviour)')
  } finally {
    await t.close()
    dir.remove()
  }
})

test.run()
