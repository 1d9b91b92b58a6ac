/**
 * MCP resource reads against the HTTP read of the same delivered set, in the same run: JSON-RPC
 * `resources/list` and `resources/read` of one skill file on an open MCP session, each as a ratio
 * to `GET /v1/me/delivery` (target ≥ 0.5 of its req/s, issue 31 §4). All three authenticate with
 * the same API key; the delivered set is one hub of 20 skills (each a SKILL.md and two files)
 * assigned to the organization.
 *
 * JSON-RPC matches answers to requests by id within a session, so every request carries its own
 * (the load driver's `uniqueIds`).
 */
import { runAlternatingRounds, type LoadTarget } from '../lib/alternating-load.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { startServer, type RunningServer } from '../lib/server-process.ts'
import { median, round } from '../lib/stats.ts'

const SKILLS = 20

async function json(res: Response, what: string): Promise<any> {
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 200)}`)
  return JSON.parse(text)
}

const skillMd = (i: number) =>
  `---\nname: bench-skill-${i}\ndescription: Skill ${i} of the MCP bench\n---\n\n${'Step.\n'.repeat(40)}`

async function run(ctx: BenchContext): Promise<void> {
  if (!ctx.hasProductSource()) {
    ctx.skip('source', 'bin/service-server.ts does not exist')
    return
  }
  const s = ctx.settings
  const dir = ctx.tempDir('mcp-resources')
  const servers: RunningServer[] = []
  try {
    const ours = await startServer(ctx.productCommand('source', dir, undefined, 'control-plane'))
    servers.push(ours)
    const base = ours.baseUrl
    const post = (path: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      })
    const signedUp = await json(
      await post('/v1/auth/sign-up', { email: 'owner@bench.test', password: 'bench password', name: 'Owner' }, {}),
      'sign-up',
    )
    const session = { authorization: `Bearer ${signedUp.session.token}` }
    await json(await post('/v1/orgs', { name: 'Bench' }, session), 'create org')
    const key = await json(await post('/v1/api-keys', { name: 'bench' }, session), 'api key')
    const hub = await json(await post('/v1/skill-hubs', { name: 'bench' }, session), 'hub')
    for (let i = 0; i < SKILLS; i++) {
      const files = [
        { path: 'scripts/run.sh', content: `#!/bin/sh\necho ${i}\n`, executable: true },
        { path: 'reference.md', content: `# Reference ${i}\n\n${'Detail.\n'.repeat(100)}` },
      ]
      const skill = await json(await post('/v1/skills', { skillMd: skillMd(i), files }, session), 'skill')
      await json(await post(`/v1/skill-hubs/${hub.item.id}/skills`, { skillId: skill.item.id }, session), 'hub skill')
    }
    await json(await post(`/v1/skill-hubs/${hub.item.id}/assignments`, { orgWide: true }, session), 'assign')
    const apiKey = { 'x-api-key': key.key as string }
    const init = await post(
      '/mcp',
      {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
      },
      { ...apiKey, accept: 'application/json, text/event-stream' },
    )
    await json(init, 'initialize')
    const mcpHeaders = {
      ...apiKey,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': init.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-11-25',
    }
    const fileUri = 'skill://bench-skill-7/reference.md'
    const calls: Record<string, string> = {
      'MCP resources/list': '{"jsonrpc":"2.0","id":[<id>],"method":"resources/list"}',
      'MCP resources/read (one file)': `{"jsonrpc":"2.0","id":[<id>],"method":"resources/read","params":{"uri":"${fileUri}"}}`,
    }
    // Check each answer once before loading it.
    const delivery = await json(await fetch(`${base}/v1/me/delivery`, { headers: apiKey }), 'delivery')
    if (delivery.items.length !== SKILLS) throw new Error(`expected ${SKILLS} delivered items`)
    for (const [label, body] of Object.entries(calls)) {
      const answer = await json(
        await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: body.replace('[<id>]', '1') }),
        label,
      )
      if (!answer.result) throw new Error(`${label}: ${JSON.stringify(answer).slice(0, 200)}`)
    }
    const DELIVERY = 'GET /v1/me/delivery'
    const targets: LoadTarget[] = [
      { key: DELIVERY, url: `${base}/v1/me/delivery`, headers: apiKey, pid: ours.pid },
      ...Object.entries(calls).map(([label, body]) => ({
        key: label,
        url: `${base}/mcp`,
        method: 'POST',
        headers: mcpHeaders,
        body,
        uniqueIds: true,
        pid: ours.pid,
      })),
    ]
    const results = await runAlternatingRounds(targets, {
      ...s,
      onRound: (r, res) => {
        for (const label of Object.keys(calls))
          printRound(label, r, s.rounds, res[label]!.rps, res[DELIVERY]!.rps, 'req/s')
      },
    })
    for (const label of Object.keys(calls)) {
      const mine = results[label]!
      const bad = mine.reduce((a, x) => a + x.non2xx + x.errors, 0)
      const total = mine.reduce((a, x) => a + x.requests, 0)
      ctx.record(
        makeFigure({
          caseName: 'mcp-resources',
          name: `${label} req/s`,
          unit: 'req/s',
          subject: `bun bin/service-server.ts --mode control-plane, POST /mcp (${SKILLS} delivered skills, API key)`,
          baselineLabel: DELIVERY,
          rounds: mine.map((x, i) => ({ baseline: results[DELIVERY]![i]!.rps, ours: x.rps })),
          target: { op: '>=', value: 0.5 },
          invalidReason: bad > total * 0.001 ? `${bad} of ${total} requests were non-2xx or errors` : undefined,
          notes: [
            `${s.tool}, ${s.connections} connections, ${s.durationSec} s per measurement; p50 ours ${round(median(mine.map((x) => x.latencyP50Ms)), 2)} ms; ${DELIVERY} median ${round(median(results[DELIVERY]!.map((x) => x.rps)), 0)} req/s`,
          ],
        }),
      )
    }
  } finally {
    await Promise.all(servers.map((x) => x.stop()))
  }
}

export default defineCase({
  name: 'mcp-resources',
  description: 'MCP resources/list and resources/read of one skill file vs GET /v1/me/delivery req/s (same run)',
  run,
})
