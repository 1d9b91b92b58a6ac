/**
 * Ceiling reference for `GET /health`: the least any server must do to meet the response
 * contract, and nothing else.
 *
 * Why: the baseline answers `{ok:true}` with no headers of its own. Every response of ours must
 * carry `X-Request-Id` (issue 2) and we send `X-Content-Type-Options: nosniff`; building a
 * Response with those headers, and reading the URL and method a router needs, costs Bun a
 * measurable share of the baseline's rate on its own. This server does exactly that, with no
 * routing, auth or validation, so the bench shows how much of the gap is the contract itself:
 * the health body, the same three headers, `request.url` and `request.method` read, and the
 * request id chosen by the same rule as ours (`src/core/request-id.ts`): the client's
 * `X-Request-Id` when it is a safe token, else a fresh one. Reading that header is part of the
 * rule and costs Bun a copy of the request's headers; `--no-echo` skips it and always makes a
 * fresh id (the ceiling as first written, kept as an informational row).
 *
 * Usage: bun bench/ceiling-server.ts [--port 0] [--host 127.0.0.1] [--no-echo]
 */
import { SAFE_REQUEST_ID } from '../src/core/request-id.ts'

const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const started = performance.now()
let counter = 101_559_956_668_416 // 36^9: ten base-36 digits, like the product's ids
let sink = 0
const echo = !process.argv.includes('--no-echo')

function safeOffered(request: Request): string | null {
  if (!echo) return null
  const offered = request.headers.get('x-request-id')
  return offered && SAFE_REQUEST_ID.test(offered) ? offered : null
}

const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  idleTimeout: 0,
  fetch: (request: Request) => {
    sink += request.url.length + request.method.length
    const body = JSON.stringify({
      ok: true,
      version: '0.0.0',
      mode: 'workspace',
      uptimeMs: Math.round(performance.now() - started),
    })
    return new Response(body, {
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'x-request-id': safeOffered(request) ?? `req_0000000000000000${(++counter).toString(36)}`,
        'x-content-type-options': 'nosniff',
      },
    })
  },
})

console.log(`service-server ceiling ceiling listening on http://${server.hostname}:${server.port}`)
process.on('exit', () => {
  if (sink < 0) console.log(sink)
})
