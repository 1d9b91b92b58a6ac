/**
 * Smoke suite for the compiled single executable: builds `dist/service-server` once, then runs it
 * in both modes as a user would.
 */
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, compiledBinary, runCommand, startChild, suite, tempDir } from '../harness.ts'
import { openApiErrors } from '../openapi-check.ts'

const root = resolve(import.meta.dirname, '../..')
const binary = join(root, 'dist', 'service-server')
const smoke = suite('smoke/binary', { timeoutMs: 120_000 })
const dir = tempDir('svc-smoke-')
const LISTENING = /^service-server \d+\.\d+\.\d+\S* (workspace|control-plane) listening on http:\/\/127\.0\.0\.1:\d+$/

smoke.before(async () => {
  // One build per test run, shared by every suite that runs the binary (it is this same path).
  await compiledBinary()
})

smoke.after(() => dir.remove())

async function stopWithin(child: { stop(): Promise<number | null> }, ms: number): Promise<number | null> {
  const started = performance.now()
  const code = await child.stop()
  assert.ok(performance.now() - started < ms, `stopped within ${ms} ms`)
  return code
}

smoke('the binary was built and carries its version', async () => {
  assert.ok(statSync(binary).size > 1_000_000)
  const version = await runCommand(binary, ['--version'])
  assert.is(version.code, 0)
  assert.match(version.stdout.trim(), /^\d+\.\d+\.\d+/)
})

smoke('workspace mode starts, answers /health and /openapi.json, and exits 0 on SIGTERM', async () => {
  const ws = join(dir.path, 'ws1')
  mkdirSync(ws)
  // A .env in the working directory must not be loaded by the binary (Bun's compiled default).
  writeFileSync(join(ws, '.env'), 'SERVICE_LOG_FORMAT=not-a-format\n')
  mkdirSync(join(dir.path, 'cfg1'))
  writeFileSync(join(dir.path, 'cfg1/server.json'), '{}')
  const child = await startChild(
    binary,
    ['--config', join(dir.path, 'cfg1/server.json'), '--data-dir', join(dir.path, 'data1'), '--port', '0'],
    { cwd: ws, env: { HOME: dir.path } },
  )
  try {
    assert.match(child.stdoutLines[0]!, LISTENING)
    const health = await (await fetch(`${child.url}/health`)).json()
    assert.equal([health.ok, health.mode], [true, 'workspace'])
    const doc = await (await fetch(`${child.url}/openapi.json`)).json()
    assert.equal(await openApiErrors(doc), [])
  } finally {
    assert.is(await stopWithin(child, 2000), 0)
  }
  assert.ok(existsSync(join(dir.path, 'cfg1/credentials.json')), 'generated tokens were persisted')
})

smoke('control-plane mode creates its database in an empty data dir and stops cleanly', async () => {
  const data = join(dir.path, 'cp-empty')
  const child = await startChild(binary, ['--mode', 'control-plane', '--data-dir', data, '--port', '0'], {
    cwd: dir.path,
    env: { HOME: dir.path },
  })
  try {
    assert.match(child.stdoutLines[0]!, LISTENING)
    assert.ok(existsSync(join(data, 'control-plane.sqlite')))
    const health = await (await fetch(`${child.url}/health`)).json()
    assert.equal([health.ok, health.mode], [true, 'control-plane'])
    const doc = await (await fetch(`${child.url}/openapi.json`)).json()
    assert.equal(await openApiErrors(doc), [])
  } finally {
    assert.is(await stopWithin(child, 2000), 0)
  }
  assert.is(statSync(join(data, 'control-plane.sqlite')).mode & 0o777, 0o600)
})

smoke('SIGINT also stops the server with exit code 0', async () => {
  const child = await startChild(
    binary,
    ['--mode', 'control-plane', '--data-dir', join(dir.path, 'cp-int'), '--port', '0'],
    { env: { HOME: dir.path } },
  )
  const started = performance.now()
  assert.is(await child.stop('SIGINT'), 0)
  assert.ok(performance.now() - started < 2000)
})

smoke('a bad flag or mode exits 2 with one line naming the valid choices', async () => {
  const flag = await runCommand(binary, ['--frobnicate'])
  assert.is(flag.code, 2)
  assert.is(flag.stderr.trim().split('\n').length, 1)
  assert.match(flag.stderr, /unknown option --frobnicate; valid options: --mode/)
  const mode = await runCommand(binary, ['--mode', 'both'])
  assert.is(mode.code, 2)
  assert.match(mode.stderr, /valid modes: workspace, control-plane/)
})

smoke('an invalid config file exits 2 naming the file and the key', async () => {
  const file = join(dir.path, 'bad.json')
  writeFileSync(file, JSON.stringify({ approval: { timeoutMs: 'soon' } }))
  const result = await runCommand(binary, ['--config', file, '--port', '0'], { env: { HOME: dir.path } })
  assert.is(result.code, 2)
  assert.ok(result.stderr.includes(file))
  assert.match(result.stderr, /approval\.timeoutMs/)
})

smoke(
  'with no flags it serves the current directory on 127.0.0.1:8787 and prints the generated tokens once',
  async () => {
    const ws = join(dir.path, 'default-ws')
    mkdirSync(ws)
    const home = join(dir.path, 'default-home')
    const child = await startChild(binary, [], { cwd: ws, env: { HOME: home, XDG_CONFIG_HOME: '', XDG_DATA_HOME: '' } })
    try {
      assert.is(child.url, 'http://127.0.0.1:8787')
      await new Promise((r) => setTimeout(r, 100))
      const text = child.stdoutLines.join('\n')
      assert.ok(text.includes(ws), 'the workspace path is printed')
      assert.match(text, /client token .*: svc_ct_/)
      assert.match(text, /host token .*: svc_ht_/)
      assert.is((await fetch(`${child.url}/health`)).status, 200)
    } finally {
      assert.is(await child.stop(), 0)
    }
    const again = await startChild(binary, [], { cwd: ws, env: { HOME: home, XDG_CONFIG_HOME: '', XDG_DATA_HOME: '' } })
    try {
      await new Promise((r) => setTimeout(r, 100))
      assert.not.match(again.stdoutLines.join('\n'), /svc_ct_|svc_ht_/, 'tokens are printed only when generated')
    } finally {
      assert.is(await again.stop(), 0)
    }
  },
)

smoke.run()
