/**
 * The MCP endpoint of the compiled binary against real clients: the MCP SDK's client over
 * Streamable HTTP, the real `opencode` binary with a `remote` MCP entry (the API key as a bearer header) that `opencode mcp list`
 * must report connected (with OpenCode's HOME and config isolated), and Claude Code's
 * `claude mcp list` where a `claude` binary is available (npm `@anthropic-ai/claude-code`; it
 * checks an HTTP server's health without a model account, but it is not a dependency of this
 * repository: set `SERVICE_TEST_CLAUDE_BIN` or install it to run that test).
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { isolatedOpencodeEnv, OPENCODE_BIN } from '../../src/workspace/sidecar/opencode-env.ts'
import { connectClient, toolJson } from '../../src/control-plane/mcp/mcp-test-kit.ts'
import { assert, compiledBinary, startChild, suite, tempDir, type ChildServer } from '../harness.ts'

const test = suite('e2e/mcp real clients', { timeoutMs: 240_000 })

interface Org {
  url: string
  apiKey: string
  skillId: string
}

async function json(url: string, init: RequestInit & { token?: string } = {}): Promise<any> {
  const headers = new Headers(init.headers)
  headers.set('content-type', 'application/json')
  if (init.token) headers.set('authorization', `Bearer ${init.token}`)
  const response = await fetch(url, { ...init, headers })
  const body = await response.json()
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${JSON.stringify(body)}`)
  return body
}

/** An owner, an organization, an API key and one skill, made over HTTP. */
async function seed(url: string): Promise<Org> {
  const signUp = await json(`${url}/v1/auth/sign-up`, {
    method: 'POST',
    body: JSON.stringify({ email: 'owner@mcp-e2e.test', password: 'owner password 1', name: 'Owner' }),
  })
  const token: string = signUp.session.token
  await json(`${url}/v1/orgs`, { method: 'POST', token, body: JSON.stringify({ name: 'MCP e2e' }) })
  const key = await json(`${url}/v1/api-keys`, { method: 'POST', token, body: JSON.stringify({ name: 'mcp' }) })
  const skill = await json(`${url}/v1/skills`, {
    method: 'POST',
    token,
    body: JSON.stringify({ skillMd: '---\nname: deploy-guide\ndescription: How we deploy\n---\n\nSteps.\n' }),
  })
  return { url, apiKey: key.key, skillId: skill.item.id }
}

async function startBinary(dir: string): Promise<ChildServer> {
  const binary = await compiledBinary()
  return startChild(binary, ['--mode', 'control-plane', '--data-dir', join(dir, 'data'), '--port', '0'], {
    cwd: dir,
    env: { HOME: dir, SERVICE_OPEN_SIGN_UP: 'true' },
    timeoutMs: 30_000,
  })
}

/** Runs a client binary in `project` with `env`; its exit code and output. */
function run(
  bin: string,
  args: string[],
  project: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.stderr.on('data', (chunk) => (out += chunk))
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, out })
    })
  })
}

test('the compiled binary serves /mcp to the SDK client and to the real opencode binary', async () => {
  const dir = tempDir('svc-mcp-e2e-')
  let server: ChildServer | undefined
  try {
    server = await startBinary(dir.path)
    const org = await seed(server.url)
    const { client } = await connectClient(`${server.url}/mcp`, { apiKey: org.apiKey })
    try {
      const found = toolJson(await client.callTool({ name: 'search', arguments: { query: 'deploy' } }))
      assert.equal(
        (found.items as Array<{ id: string }>).map((i) => i.id),
        [org.skillId],
      )
    } finally {
      await client.close()
    }

    const project = join(dir.path, 'project')
    mkdirSync(project)
    writeFileSync(
      join(project, 'opencode.json'),
      JSON.stringify({
        $schema: 'https://opencode.ai/config.json',
        mcp: {
          org: {
            type: 'remote',
            url: `${server.url}/mcp`,
            headers: { authorization: `Bearer ${org.apiKey}` },
            oauth: false,
          },
        },
      }),
    )
    const listed = await run(OPENCODE_BIN, ['mcp', 'list'], project, isolatedOpencodeEnv(join(dir.path, 'home')))
    assert.is(listed.code, 0, listed.out)
    assert.match(listed.out, /org[\s\S]*connected/i)
    assert.not.match(listed.out, /failed|needs auth/i)
  } finally {
    await server?.stop()
    dir.remove()
  }
})

const CLAUDE_BIN =
  process.env.SERVICE_TEST_CLAUDE_BIN ??
  resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../node_modules/.bin/claude')

if (existsSync(CLAUDE_BIN)) {
  test('Claude Code reports the endpoint connected with an API key header, without a model account', async () => {
    const dir = tempDir('svc-mcp-claude-')
    let server: ChildServer | undefined
    try {
      server = await startBinary(dir.path)
      const org = await seed(server.url)
      const project = join(dir.path, 'project')
      const home = join(dir.path, 'home')
      mkdirSync(project)
      mkdirSync(home)
      const env = { HOME: home }
      // User scope: a project-scoped server waits for an interactive approval before it is contacted.
      const args = ['mcp', 'add', '--transport', 'http', '--scope', 'user', 'org', `${server.url}/mcp`]
      const added = await run(CLAUDE_BIN, [...args, '--header', `x-api-key: ${org.apiKey}`], project, env)
      assert.is(added.code, 0, added.out)
      const listed = await run(CLAUDE_BIN, ['mcp', 'list'], project, env)
      assert.is(listed.code, 0, listed.out)
      assert.match(listed.out, /org: .*\/mcp \(HTTP\) - . Connected/)
    } finally {
      await server?.stop()
      dir.remove()
    }
  })
} else console.log(`e2e/mcp real clients: Claude Code test skipped: no ${CLAUDE_BIN} (set SERVICE_TEST_CLAUDE_BIN)`)

test.run()
