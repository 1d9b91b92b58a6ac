/**
 * Module floor for the start-time and idle-memory figures: the product's workspace-mode module
 * graph, evaluated, then nothing but a hello-world server.
 *
 * Why: the product binary's start time and idle memory have two parts, loading our code and
 * starting the server (configuration, state database, workspace watchers, routes). This binary
 * is compiled with the product's own build flags and bytecode profiles and imports exactly what
 * `--mode workspace` imports before it starts anything, so its ratio to hello-world is the floor
 * any start-up work of ours sits on, and the gap between it and the product is that work.
 *
 * Usage: module-floor [--port 0] [--host 127.0.0.1]
 */
// Each namespace is kept: Bun's bundler drops a dynamic import whose result is never used, and then
// the module is never evaluated (measured: the workspace app's module-level objects were missing).
;(globalThis as { moduleFloor?: unknown[] }).moduleFloor = [
  await import('../src/main.ts'),
  await import('../src/workspace/config/server-config.ts'),
  await import('../src/workspace/app.ts'),
]
// Then exactly the hello-world reference (its listening line names it hello; the harness only
// needs the port).
await import('./hello.ts')

export {}
