/**
 * The control plane's stack floor as a server: `bench/floor-handlers.ts` behind `Bun.serve`, on
 * the SQLite file the product serves (WAL lets both open it). See floor-handlers.ts for what it
 * does and why.
 *
 * Usage: bun bench/floor-server.ts --database <control-plane.sqlite> [--port 0] [--host 127.0.0.1]
 */
import { floorHandlers } from './floor-handlers.ts'

const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const handlers = await floorHandlers(flag('database', 'control-plane.sqlite'))
const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  idleTimeout: 0,
  fetch: handlers.fetch,
})

console.log(`service-server floor floor listening on http://${server.hostname}:${server.port}`)
