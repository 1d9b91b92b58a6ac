/**
 * The compiled binary serves the console from inside itself: started in an empty directory, it
 * answers the page and every file with the same bytes and hashed names as the source tree.
 * (No browser needed; it lives here beside the browser suites it backs.)
 */
import { join, resolve } from 'node:path'
import { consoleAssets } from '../../src/console/console-assets.ts'
import { CONSOLE_CSP } from '../../src/console/console-routes.ts'
import { assert, compiledBinary, startChild, suite, tempDir } from '../harness.ts'

const root = resolve(import.meta.dirname, '../..')
const binary = join(root, 'dist', 'service-server')
const test = suite('console in the compiled binary', { timeoutMs: 120_000 })
const dir = tempDir('svc-console-bin-')

test.before(async () => {
  // One build per test run, shared by every suite that runs the binary (it is this same path).
  await compiledBinary()
})

test.after(() => dir.remove())

test('the binary serves the same console as the source, with no files beside it', async () => {
  const child = await startChild(
    binary,
    ['--mode', 'control-plane', '--data-dir', join(dir.path, 'data'), '--port', '0', '--host', '127.0.0.1'],
    { cwd: dir.path, env: { HOME: dir.path } },
  )
  try {
    const expected = consoleAssets()
    const page = await fetch(`${child.url}/console/`)
    assert.is(page.status, 200)
    assert.is(page.headers.get('content-security-policy'), CONSOLE_CSP)
    assert.is(await page.text(), new TextDecoder().decode(expected.page.body))
    for (const [name, file] of expected.files) {
      const response = await fetch(`${child.url}/console/${name}`, { headers: { 'accept-encoding': 'identity' } })
      assert.is(response.status, 200, name)
      assert.equal(new Uint8Array(await response.arrayBuffer()), file.body, name)
    }
  } finally {
    await child.stop()
  }
})

test.run()
