/**
 * The same guards under Deno, which has no timeouts of its own and hands request targets over as
 * sent: the application's body deadline, the request caps and the dot-segment refusal.
 */
import { cpSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { assert, DENO, startChild, suite, tempDir } from '../harness.ts'
import { rawConnect } from '../raw-socket.ts'

const root = resolve(import.meta.dirname, '../..')
const denoFaults = suite('faults/deno', { timeoutMs: 150_000 })
const dir = tempDir('svc-deno-faults-')
denoFaults.after(() => dir.remove())

const CLIENT = 'deno-faults-client-token-0123456789'

denoFaults(
  'under Deno a stalled body is answered 408, requests past the per-address cap 503, and dot segments 400',
  async () => {
    cpSync(join(root, 'fixtures/workspace-basic'), join(dir.path, 'ws'), { recursive: true })
    writeFileSync(
      join(dir.path, 'server.json'),
      JSON.stringify({
        token: CLIENT,
        hostToken: 'deno-faults-host-token-0123456789',
        workspaces: [{ path: join(dir.path, 'ws'), id: 'main' }],
        dataDir: join(dir.path, 'data'),
        approval: { mode: 'auto' },
      }),
    )
    const child = await startChild(
      DENO,
      [
        'run',
        '--allow-all',
        '--unstable-no-legacy-abort',
        join(root, 'bin/service-server.ts'),
        '--config',
        join(dir.path, 'server.json'),
        '--port',
        '0',
      ],
      {
        cwd: root,
        env: { HOME: dir.path, SERVICE_BODY_IDLE_TIMEOUT: '2', SERVICE_MAX_REQUESTS_PER_ADDRESS: '2' },
        timeoutMs: 120_000,
      },
    )
    const stalledHead = `PATCH /workspace/main/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"workspace":`
    const held = []
    try {
      held.push(await rawConnect(child.url, stalledHead), await rawConnect(child.url, stalledHead))
      await new Promise((r) => setTimeout(r, 300))
      const busy = await fetch(`${child.url}/workspaces`, { headers: { authorization: `Bearer ${CLIENT}` } })
      assert.is(busy.status, 503)
      assert.is(busy.headers.get('retry-after'), '2')
      assert.is((await busy.json()).code, 'server_busy')
      assert.is((await fetch(`${child.url}/health`)).status, 200, '/health is never capped')
      for (const conn of held) {
        assert.ok(await conn.waitFor('request_timeout', 8000), conn.received())
        assert.match(conn.received(), /^HTTP\/1\.1 408/)
      }
      const dots = await rawConnect(
        child.url,
        `GET /workspace/main/%2e%2e/main/config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${CLIENT}\r\nConnection: close\r\n\r\n`,
      )
      assert.ok(await dots.waitFor('invalid_path', 5000), dots.received())
      assert.match(dots.received(), /^HTTP\/1\.1 400/)
      dots.destroy()
    } finally {
      for (const conn of held) conn.destroy()
      assert.is(await child.stop(), 0)
    }
  },
)

denoFaults.run()
