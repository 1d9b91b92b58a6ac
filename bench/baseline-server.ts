/**
 * Throughput baseline: the minimal Bun.serve JSON handler.
 *
 * Why: the product's request-rate target is "at least 0.9× of what Bun itself
 * does for a trivial JSON response on this machine in this run". Anything the
 * product adds per request (routing, auth checks, logging, JSON building) shows
 * up as the gap to this server. It prints the same listening line as the
 * product so the harness starts both the same way.
 *
 * Usage: bun bench/baseline-server.ts [--port 0] [--host 127.0.0.1]
 */
const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  idleTimeout: 0,
  fetch: () => Response.json({ ok: true }),
})

console.log(`service-server baseline baseline listening on http://${server.hostname}:${server.port}`)

export {}
