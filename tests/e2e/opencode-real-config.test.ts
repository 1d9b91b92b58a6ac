/**
 * The shared OpenCode config schema against OpenCode itself (npm `opencode-ai`, the version the
 * tests pin): `opencode debug config` loads both real-shaped fixtures that `checkOpencodeConfig`
 * accepts, and refuses a file at the same fields `checkOpencodeConfig` names. Each run starts the
 * binary (seconds on a loaded machine), so the many single-field cases live in
 * `src/opencode/opencode-config.test.ts`, checked by hand against the same version.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { checkOpencodeConfig, parseJsonc } from '../../src/opencode/opencode-config.ts'
import { isolatedOpencodeEnv, OPENCODE_BIN } from '../../src/workspace/sidecar/opencode-env.ts'
import { assert, suite, tempDir } from '../harness.ts'

const test = suite('e2e/opencode real config', { timeoutMs: 120_000 })

const FIXTURES = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../fixtures/opencode')

/** Runs `opencode debug config` in `project`; its exit code and output. */
function debugConfig(project: string, home: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(OPENCODE_BIN, ['debug', 'config'], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', ...isolatedOpencodeEnv(home) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

test('OpenCode loads both real-shaped fixtures, as the shared schema says it will', async () => {
  const dir = tempDir('svc-opencode-config-')
  try {
    for (const file of ['opencode.jsonc', 'opencode.json']) {
      const project = join(dir.path, file.replace('.', '-'))
      mkdirSync(project)
      copyFileSync(join(FIXTURES, file), join(project, file))
      const { value } = await parseJsonc(readFileSync(join(FIXTURES, file), 'utf8'))
      assert.equal(checkOpencodeConfig(value), [], `${file} passes the shared schema`)
      const run = await debugConfig(project, join(dir.path, `home-${file}`))
      assert.is(run.code, 0, `${file}: ${run.stderr}`)
      const loaded = JSON.parse(run.stdout) as Record<string, unknown>
      const fixture = value as Record<string, Record<string, unknown>>
      assert.equal(Object.keys(loaded.mcp as object), Object.keys(fixture.mcp!), `${file}: every MCP entry loaded`)
      assert.equal(Object.keys(loaded.command as object), Object.keys(fixture.command!), `${file}: every command`)
    }
  } finally {
    dir.remove()
  }
})

test('OpenCode refuses a config at the fields the shared schema names', async () => {
  const dir = tempDir('svc-opencode-config-')
  try {
    const config = {
      mcp: { files: { type: 'local', command: 'npx server' } },
      agent: { reviewer: { mode: 'sometimes' } },
      plugin: 'opencode-wakatime',
    }
    const project = join(dir.path, 'project')
    mkdirSync(project)
    writeFileSync(join(project, 'opencode.json'), JSON.stringify(config))
    const paths = checkOpencodeConfig(config).map((issue) => issue.path)
    assert.equal(paths.sort(), ['agent.reviewer.mode', 'mcp.files.command', 'plugin'])
    const run = await debugConfig(project, join(dir.path, 'home'))
    assert.is.not(run.code, 0)
    for (const path of paths) assert.ok(run.stderr.includes(` ${path}\n`), `OpenCode names ${path}: ${run.stderr}`)
  } finally {
    dir.remove()
  }
})

test.run()
