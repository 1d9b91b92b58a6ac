/**
 * The same source runs under Deno: start both modes with `deno run` and check /health.
 * Deno comes from `npm install` (the harness fails loudly without it), so this never skips.
 */
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, DENO, startChild, suite, tempDir } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const denoSuite = suite('smoke/deno', { timeoutMs: 120_000 })
const dir = tempDir('svc-deno-')
denoSuite.after(() => dir.remove())

const DENO_ARGS = ['run', '--allow-all', '--unstable-no-legacy-abort', join(root, 'bin/service-server.ts')]

denoSuite('the control plane runs under Deno with node:sqlite and answers /health', async () => {
  const child = await startChild(
    DENO,
    [...DENO_ARGS, '--mode', 'control-plane', '--data-dir', join(dir.path, 'cp'), '--port', '0'],
    { cwd: root, env: { HOME: dir.path }, timeoutMs: 90_000 },
  )
  try {
    const health = await (await fetch(`${child.url}/health`)).json()
    assert.equal([health.ok, health.mode], [true, 'control-plane'])
    assert.is((await fetch(`${child.url}/openapi.json`)).status, 200)
  } finally {
    assert.is(await child.stop(), 0)
  }
})

denoSuite('the workspace server runs under Deno and answers /health', async () => {
  mkdirSync(join(dir.path, 'ws'))
  const child = await startChild(
    DENO,
    [
      ...DENO_ARGS,
      '--config',
      join(dir.path, 'server.json'),
      '--workspace',
      join(dir.path, 'ws'),
      '--data-dir',
      join(dir.path, 'data'),
      '--port',
      '0',
    ],
    { cwd: root, env: { HOME: dir.path }, timeoutMs: 90_000 },
  )
  try {
    const health = await (await fetch(`${child.url}/health`)).json()
    assert.equal([health.ok, health.mode], [true, 'workspace'])
  } finally {
    assert.is(await child.stop(), 0)
  }
})

denoSuite.run()
