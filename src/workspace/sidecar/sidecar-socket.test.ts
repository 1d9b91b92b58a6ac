/**
 * The WebSocket relay against the fake upstream's terminal socket, over a real listener: tickets,
 * close codes both ways, the per-token cap, backpressure and shutdown.
 */
import { connect } from 'node:net'
import { assert, suite } from '../../../tests/harness.ts'
import { type Listener, serve } from '../../serve.ts'
import { HIGH_WATER_BYTES, MAX_SOCKETS_PER_TOKEN } from './socket-relay.ts'
import { eventually, type ProxyFixture, startProxyFixture } from '../testing/sidecar-test-kit.ts'

const ctx: { fx: ProxyFixture; listener: Listener; base: string } = {} as never
const ws = suite<typeof ctx>('workspace/sidecar WebSocket relay (fake upstream)', { timeoutMs: 20_000 })

ws.before(async () => {
  ctx.fx = await startProxyFixture()
  ctx.listener = await serve({ host: '127.0.0.1', port: 0, fetch: ctx.fx.kit.app.fetch })
  ctx.base = `127.0.0.1:${ctx.listener.port}`
})

ws.after(async () => {
  await ctx.listener?.stop()
  await ctx.fx?.close()
})

/** Opens a client socket and records what happens to it. */
function open(path: string, token?: string) {
  const socket = new WebSocket(
    `ws://${ctx.base}${path}`,
    (token ? { headers: { authorization: `Bearer ${token}` } } : undefined) as never,
  )
  const messages: string[] = []
  socket.onmessage = (event) => messages.push(String(event.data))
  const opened = new Promise<boolean>((resolve) => {
    socket.onopen = () => resolve(true)
    socket.onerror = () => resolve(false)
  })
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.onclose = (event) => resolve({ code: event.code, reason: event.reason })
  })
  return { socket, messages, opened, closed }
}

async function ticket(mount = '/sidecar'): Promise<string> {
  const res = await ctx.fx.kit.req(`${mount}/pty/pty_echo/connect-token`, { method: 'POST' })
  assert.is(res.status, 200)
  return ((await res.json()) as { ticket: string }).ticket
}

ws('messages cross both ways in the pinned directory, and a client close code reaches the sidecar', async () => {
  const client = open(`/sidecar/pty/pty_echo/connect?ticket=${encodeURIComponent(await ticket())}`)
  assert.ok(await client.opened)
  await eventually(() => client.messages.length === 1, 'the greeting')
  assert.is(client.messages[0], `hello ${ctx.fx.kit.roots[0]}`)
  client.socket.send('ping-1')
  await eventually(() => client.messages.includes('echo:ping-1'), 'the echo')
  const upgrade = [...ctx.fx.fake.requests].reverse().find((r) => r.path === '/pty/pty_echo/connect')!
  assert.is(upgrade.headers.authorization, `Basic ${btoa('opencode:fake-sidecar-password-1')}`)
  assert.not.ok(
    upgrade.query.some(([k]) => k === 'ticket'),
    'our ticket reached the sidecar',
  )
  client.socket.close(4001, 'client leaves')
  await eventually(() => ctx.fx.fake.socketCloses.some((c) => c.code === 4001), 'the close at the sidecar')
  assert.equal(ctx.fx.fake.socketCloses.at(-1), { code: 4001, reason: 'client leaves' })
})

ws("the sidecar's close code and reason reach the client", async () => {
  const client = open('/sidecar/pty/pty_echo/connect', ctx.fx.kit.tokens.collaborator)
  assert.ok(await client.opened)
  client.socket.send('close:4005')
  assert.equal(await client.closed, { code: 4005, reason: 'asked to close' })
})

ws('a ticket is refused on another path or mount, and after its one use', async () => {
  const once = await ticket()
  const other = open(`/w/${ctx.fx.kit.wsIds[1]}/sidecar/pty/pty_echo/connect?ticket=${encodeURIComponent(once)}`)
  assert.is(await other.opened, false)
  const reused = open(`/sidecar/pty/pty_echo/connect?ticket=${encodeURIComponent(once)}`)
  assert.is(await reused.opened, false, 'the ticket was burnt by the wrong use')
  const viewer = open('/sidecar/pty/pty_echo/connect', ctx.fx.kit.tokens.viewer)
  assert.is(await viewer.opened, false, 'a viewer opened a terminal')
  const res = await ctx.fx.kit.req('/sidecar/pty/pty_echo/connect-token', { method: 'POST', as: 'viewer' })
  assert.is(res.status, 403)
})

ws('each token holds a bounded number of relayed sockets', async () => {
  const token = ctx.fx.kit.tokens.owner
  const held = []
  for (let i = 0; i < MAX_SOCKETS_PER_TOKEN; i++) {
    const client = open('/sidecar/pty/pty_echo/connect', token)
    assert.ok(await client.opened, `socket ${i}`)
    held.push(client)
  }
  const refused = open('/sidecar/pty/pty_echo/connect', token)
  assert.is(await refused.opened, false, 'a socket past the cap opened')
  const other = open('/sidecar/pty/pty_echo/connect', ctx.fx.kit.tokens.collaborator)
  assert.ok(await other.opened, 'the cap is per token')
  other.socket.close()
  held[0]!.socket.close()
  await held[0]!.closed
  let again = open('/sidecar/pty/pty_echo/connect', token)
  // The slot is released when the relay sees the close; allow it a moment on a loaded machine.
  for (let attempt = 0; attempt < 20 && !(await again.opened); attempt++) {
    await new Promise((r) => setTimeout(r, 50))
    again = open('/sidecar/pty/pty_echo/connect', token)
  }
  assert.ok(await again.opened, 'a freed slot was not reusable')
  for (const client of [...held.slice(1), again]) client.socket.close()
})

ws('a client that stops reading stops the relay from reading the sidecar', async () => {
  // A raw client: completes the handshake, asks for a flood, then never reads.
  const key = btoa('0123456789abcdef')
  const tcp = connect({ host: '127.0.0.1', port: ctx.listener.port })
  const headers = [
    'GET /sidecar/pty/pty_echo/connect HTTP/1.1',
    `Host: ${ctx.base}`,
    'Upgrade: websocket',
    'Connection: Upgrade',
    `Sec-WebSocket-Key: ${key}`,
    'Sec-WebSocket-Version: 13',
    `Authorization: Bearer ${ctx.fx.kit.tokens.collaborator}`,
  ]
  let head = ''
  await new Promise<void>((resolve, reject) => {
    tcp.on('error', reject)
    tcp.on('data', (chunk) => {
      head += chunk.toString('latin1')
      if (head.includes('\r\n\r\n')) {
        tcp.pause()
        resolve()
      }
    })
    tcp.write(`${headers.join('\r\n')}\r\n\r\n`)
  })
  assert.match(head, /^HTTP\/1\.1 101/)
  // A masked text frame: "flood:64".
  const payload = new TextEncoder().encode('flood:64')
  const frame = new Uint8Array([
    0x81,
    0x80 | payload.length,
    1,
    2,
    3,
    4,
    ...payload.map((b, i) => b ^ [1, 2, 3, 4][i & 3]!),
  ])
  tcp.write(frame)
  await eventually(() => ctx.fx.fake.floodBytesSent > 0, 'the flood to start')
  // Wait until the sidecar can send no more (kernel socket buffers fill first, then the relay must stop).
  let sent = -1
  for (let i = 0; i < 40 && sent !== ctx.fx.fake.floodBytesSent; i++) {
    sent = ctx.fx.fake.floodBytesSent
    await new Promise((r) => setTimeout(r, 400))
  }
  // Without backpressure the relay would drain all 64 MiB from the sidecar into memory.
  assert.ok(sent < 32 * 1024 * 1024, `the sidecar sent ${sent} bytes to a client that reads nothing`)
  assert.ok(HIGH_WATER_BYTES < sent, 'the flood never got going')
  tcp.destroy()
})

ws('a client with no listener to upgrade it gets 426, and shutdown closes open relays with 1001', async () => {
  const res = await ctx.fx.kit.req('/sidecar/pty/pty_echo/connect')
  assert.equal([res.status, (await res.json()).code], [426, 'websocket_upgrade_required'])
  const client = open('/sidecar/pty/pty_echo/connect', ctx.fx.kit.tokens.collaborator)
  assert.ok(await client.opened)
  ctx.fx.kit.app.streams.closeAll()
  assert.is((await client.closed).code, 1001)
})

ws.run()
