/**
 * The proxy and WebSocket relay under Deno. In its default mode, where `request.signal` also fires after every normal
 * response: bodies must still arrive whole, event streams keep flowing, and a disconnect still
 * reaches the upstream. Deno comes from `npm install`, so it never skips.
 */
import { resolve } from 'node:path'
import { assert, DENO, runCommand, suite } from '../../../tests/harness.ts'

const root = resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../../..')
const deno = suite('workspace/sidecar under Deno', { timeoutMs: 120_000 })

deno(
  'with legacy request.signal aborts, bodies arrive whole, streams flow and disconnects reach the upstream',
  async () => {
    const run = await runCommand(DENO, ['run', '--allow-all', 'fixtures/fake-sidecar/deno-proxy-check.ts'], {
      cwd: root,
      env: { NO_COLOR: '1' },
      timeoutMs: 100_000,
    })
    assert.is(run.code, 0, run.stderr)
    const out = JSON.parse(run.stdout.trim().split('\n').pop()!)
    assert.is(out.slowBody, Array.from({ length: 8 }, (_, i) => `chunk-${i}\n`).join(''))
    assert.match(out.events, /server\.connected[\s\S]*server\.heartbeat/)
    assert.is(out.upstreamAborted, true)
  },
)

deno('the WebSocket relay opens with a ticket, relays messages and close codes both ways', async () => {
  const run = await runCommand(DENO, ['run', '--allow-all', 'fixtures/fake-sidecar/deno-socket-check.ts'], {
    cwd: root,
    env: { NO_COLOR: '1' },
    timeoutMs: 100_000,
  })
  assert.is(run.code, 0, run.stderr)
  const out = JSON.parse(run.stdout.trim().split('\n').pop()!)
  assert.ok(
    out.messages.some((m: string) => m.startsWith('hello ')),
    JSON.stringify(out.messages),
  )
  assert.ok(out.messages.includes('echo:from-deno'))
  assert.equal(out.sidecarSawClose, { code: 4001, reason: 'deno client leaves' })
  assert.equal(out.clientSawClose, [4005, 'asked to close'])
})

deno.run()
