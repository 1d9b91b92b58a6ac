/**
 * Compiled hello-world reference: the smallest useful Bun HTTP server.
 *
 * Why: the harness compiles this with `bun build --compile` each run and uses
 * it as the reference for the product binary's start time and idle memory,
 * so both sides carry the same embedded Bun runtime and the ratio shows only
 * what the product adds. It prints the same listening line as the product.
 *
 * Usage: hello [--port 0] [--host 127.0.0.1]
 */
const bun = (globalThis as any).Bun

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const server = bun.serve({
  hostname: flag('host', '127.0.0.1'),
  port: Number(flag('port', '0')),
  fetch: () => new Response('hello'),
})

console.log(`service-server hello hello listening on http://${server.hostname}:${server.port}`)

export {}
