/**
 * TEMPORARY stand-in for bin/service-server.ts, used only to exercise the
 * harness before the real server exists. Delete once bin/service-server.ts
 * prints its listening line. Run with BENCH_PRODUCT_ENTRY=bench/stand-in-server.ts.
 */
const bun = (globalThis as any).Bun
function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}
const mode = flag('mode', 'workspace')
const started = Date.now()
const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  idleTimeout: 0,
  fetch(req: Request) {
    const url = new URL(req.url)
    if (url.pathname === '/health') return Response.json({ ok: true, version: '0.0.0-standin', mode, uptimeMs: Date.now() - started })
    return Response.json({ error: 'unauthorized' }, { status: 401 })
  },
})
console.log(`service-server 0.0.0-standin ${mode} listening on http://${server.hostname}:${server.port}`)
export {}
