/**
 * Workspace read routes per second as ratios to the minimal Bun.serve JSON handler measured in
 * the same run: `GET /workspaces`, `/workspace/:id/config`, `/skills`, `/commands`, `/mcp` on a
 * workspace with 20 skills, 20 commands, MCP entries and plugins. Target: each ≥ 0.5.
 *
 * Why these: they are what clients poll, and their cost is parsing files; the server keeps
 * parsed views cached until the watcher or a write invalidates them, so each should cost about
 * as much as a route that builds a small JSON body from memory.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { BENCH_CLIENT_TOKEN } from '../lib/product-server.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const TARGET = { op: '>=' as const, value: 0.5 }

/** Fills the bench workspace: 20 skills, 20 commands, a commented opencode.jsonc. */
function populate(ws: string): void {
  for (let i = 0; i < 20; i++) {
    const name = `skill-${String(i).padStart(2, '0')}`
    mkdirSync(join(ws, '.opencode/skills', name), { recursive: true })
    writeFileSync(
      join(ws, '.opencode/skills', name, 'SKILL.md'),
      `---\nname: ${name}\ndescription: Bench skill number ${i}, which explains a task in a paragraph of text.\n---\n\n# ${name}\n\n${'Steps to follow. '.repeat(40)}\n`,
    )
    mkdirSync(join(ws, '.opencode/commands'), { recursive: true })
    writeFileSync(
      join(ws, '.opencode/commands', `command-${i}.md`),
      `---\ndescription: Bench command ${i}\nagent: build\nsubtask: ${i % 2 === 0}\n---\n\nDo task ${i} with $ARGUMENTS.\n`,
    )
  }
  const mcp = Object.fromEntries(
    Array.from({ length: 5 }, (_, i) => [
      `server-${i}`,
      i % 2
        ? { type: 'remote', url: `https://mcp${i}.example/sse`, headers: { Authorization: `Bearer secret-${i}` } }
        : { type: 'local', command: ['npx', '-y', `server-${i}`], environment: { KEY: `secret-${i}` } },
    ]),
  )
  writeFileSync(
    join(ws, 'opencode.jsonc'),
    `{\n  // bench config\n  "model": "a/b",\n  "plugin": ["p-one@1", "@s/p-two"],\n  "mcp": ${JSON.stringify(mcp, null, 2).replace(/\n/g, '\n  ')}\n}\n`,
  )
}

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('workspace-reads')
  const cmd = ctx.productCommand('source', dir, undefined, 'workspace')
  populate(join(dir, 'ws'))
  const servers: RunningServer[] = []
  try {
    const baseline = await startServer(ctx.baselineCommand())
    servers.push(baseline)
    const ours = await startServer(cmd)
    servers.push(ours)
    const headers = { authorization: `Bearer ${BENCH_CLIENT_TOKEN}` }
    const list = await fetch(`${ours.baseUrl}/workspaces`, { headers })
    if (list.status !== 200)
      throw new Error(`GET /workspaces answered ${list.status}: ${(await list.text()).slice(0, 200)}`)
    const id = ((await list.json()) as { items: Array<{ id: string }> }).items[0]!.id
    const paths = [
      '/workspaces',
      `/workspace/${id}/config`,
      `/workspace/${id}/skills`,
      `/workspace/${id}/commands`,
      `/workspace/${id}/mcp`,
    ]
    for (const path of paths) {
      const res = await fetch(`${ours.baseUrl}${path}`, { headers })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${text.slice(0, 200)}`)
      if (path.endsWith('/skills') && (JSON.parse(text) as { items: unknown[] }).items.length !== 20)
        throw new Error('bench workspace should list 20 skills')
    }
    const targets: LoadTarget[] = [
      { key: 'baseline', url: `${baseline.baseUrl}/` },
      ...paths.map((path) => ({ key: path, url: `${ours.baseUrl}${path}`, headers })),
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        for (const path of paths)
          printRound(path.replace(id, ':id'), r, s.rounds, res[path]!.rps, res.baseline!.rps, 'req/s')
      },
    })
    for (const path of paths) {
      const mine = results[path]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'workspace-reads',
          name: `GET ${path.replace(id, ':id')} req/s`,
          unit: 'req/s',
          subject: 'bun bin/service-server.ts (20 skills, 20 commands, 5 MCP)',
          baselineLabel: 'Bun.serve JSON',
          rounds: mine.map((x, i) => ({ baseline: results.baseline![i]!.rps, ours: x.rps })),
          target: TARGET,
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p99 ours ${round(median(mine.map((x) => x.latencyP99Ms)))} ms`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'workspace-reads',
  description:
    'GET /workspaces, config, skills, commands, mcp req/s vs Bun.serve JSON baseline; target ratio >= 0.5 each',
  run,
})
