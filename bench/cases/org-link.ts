/**
 * A workspace linked to its organization (issue 30 §4), in process over real HTTP and real files:
 *
 * 1. 1,000 delivered skills of 10 files each into a fresh linked workspace: wall time from the
 *    member approving the device code to the link reporting `in_sync` with the 10,000 files on
 *    disk (token, feed, `GET /v1/me/delivery` of ~10 MB, validation, plan, write gate, all-or-
 *    nothing apply, reload event). Floor, same round: copying the same 10,000 files from a local
 *    folder into a fresh workspace through the same write path (read, write gate, import writer,
 *    change tracker). Target ≤ 3.
 * 2. A new version published → its files on disk in the linked workspace (the 1,000 skills linked),
 *    p50 over 20 publications. Target: p50 ≤ 1 s (loopback). Floor, same round: writing the same
 *    changed skill from a local folder through the same write path.
 *
 * The control plane is the real one, in this process on its own loopback port (SQLite file): the
 * 1,000 skills sit in one hub assigned to the member, the member approves the device code through
 * the API, a publication is `POST /v1/config-objects/:id/versions`. So figure 2 includes the control
 * plane's own work per change (its feed, and rendering the member's whole set for
 * `GET /v1/me/delivery`).
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { silentLogger } from '../../src/core/logger.ts'
import { modeFor } from '../../src/opencode/skill-bundle.ts'
import { createWorkspaceApp, type WorkspaceSurface } from '../../src/workspace/app.ts'
import { loadWorkspaceConfig } from '../../src/workspace/config/server-config.ts'
import { LINK_PRINCIPAL } from '../../src/workspace/org-link/org-link.ts'
import { applyImport } from '../../src/workspace/portability/import-apply.ts'
import type { PlannedChange } from '../../src/workspace/portability/import-plan.ts'
import { createControlPlaneApp } from '../../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../../src/control-plane/config.ts'
import { contractClient } from '../../src/control-plane/testing/contract-client.ts'
import { buildFixtureOrg } from '../../src/control-plane/testing/org-fixture.ts'
import { type Listener, serve } from '../../src/serve.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { median, round } from '../lib/stats.ts'

const SKILLS = 1000
const FILES_PER_SKILL = 10
const PUBLICATIONS = 20
const HOST = 'bench-host-token-0123456789abcdef'

interface BenchFile {
  path: string
  content: string
  executable?: boolean
}
interface BenchItem {
  name: string
  files: BenchFile[]
}

function skillFiles(i: number, version: number): BenchFile[] {
  const name = `skill-${String(i).padStart(4, '0')}`
  const files: BenchFile[] = [
    {
      path: 'SKILL.md',
      content: `---\nname: ${name}\ndescription: Bench skill ${i}\n---\nVersion ${version}. ${'Body. '.repeat(60)}\n`,
    },
  ]
  for (let f = 1; f < FILES_PER_SKILL; f++)
    files.push({
      path: f < 3 ? `scripts/run-${f}.sh` : `reference/part-${f}.md`,
      content: `# ${name} part ${f} v${version}\n${'line of reference text\n'.repeat(40)}`,
      executable: f < 3,
    })
  return files
}

const item = (i: number, version = 1): BenchItem => ({
  name: `skill-${String(i).padStart(4, '0')}`,
  files: skillFiles(i, version),
})

/** The real control plane with the 1,000 skills in a hub assigned to the fixture's member. */
async function startPlane(ctx: BenchContext, items: BenchItem[]) {
  const dir = ctx.tempDir('org-link-cp')
  const base = loadControlPlaneConfig({}, {}, dir)
  const app = await createControlPlaneApp(
    {
      ...base,
      dataDir: join(dir, 'data'),
      databasePath: join(dir, 'control-plane.sqlite'),
      logRequests: false,
      openSignUp: true,
      file: { ...base.file, oauth: { deviceIntervalSeconds: 1 } },
    },
    { logger: silentLogger, scrypt: { N: 2 ** 10, r: 8, p: 1 } },
  )
  const listener: Listener = await serve({ host: '127.0.0.1', port: 0, fetch: app.fetch })
  const client = contractClient(app)
  const org = await buildFixtureOrg(client, 'benchlink')
  const owner = org.owner.token
  const hub = (await client.post('/v1/skill-hubs', { token: owner, json: { name: 'Bench' } })).body.item.id as string
  const ids: string[] = []
  for (const it of items) {
    const [skillMd, ...files] = it.files
    const created = await client.post('/v1/skills', {
      token: owner,
      json: {
        skillMd: skillMd!.content,
        files: files.map((f) => ({ path: f.path, content: f.content, executable: f.executable ?? false })),
      },
    })
    if (created.status !== 201) throw new Error(`creating ${it.name}: ${JSON.stringify(created.body)}`)
    ids.push(created.body.item.id as string)
    await client.post(`/v1/skill-hubs/${hub}/skills`, { token: owner, json: { skillId: created.body.item.id } })
  }
  await client.post(`/v1/skill-hubs/${hub}/assignments`, { token: owner, json: { memberId: org.member.memberId } })
  return {
    url: `http://127.0.0.1:${listener.port}`,
    async approve(userCode: string) {
      const r = await client.post('/v1/oauth/device/approve', { token: org.member.token, json: { userCode } })
      if (r.status !== 200) throw new Error(`approve: ${JSON.stringify(r.body)}`)
    },
    /** A new version of skill `index` whose SKILL.md reads `Version <version>.`. */
    async publish(index: number, version: number) {
      const r = await client.post(`/v1/config-objects/${ids[index]}/versions`, {
        token: owner,
        json: { input: { rawSourceText: item(index, version).files[0]!.content } },
      })
      if (r.status !== 201) throw new Error(`publish: ${JSON.stringify(r.body)}`)
    },
    async close() {
      await listener.stop()
      await app.close()
    },
  }
}
type Plane = Awaited<ReturnType<typeof startPlane>>

async function workspaceApp(dir: string): Promise<WorkspaceSurface> {
  const root = join(dir, 'ws')
  mkdirSync(root, { recursive: true })
  writeFileSync(
    join(dir, 'server.json'),
    JSON.stringify({
      hostToken: HOST,
      token: 'bench-client-token-0123456789abcdef',
      workspaces: [{ path: root }],
      approval: { mode: 'auto' },
      dataDir: join(dir, 'data'),
      logRequests: false,
    }),
  )
  const config = loadWorkspaceConfig({ config: join(dir, 'server.json') }, { HOME: dir }, dir)
  return createWorkspaceApp(config, {
    logger: silentLogger,
    watch: false,
    env: {},
    // The device poll follows the control plane's 1 s interval (polling faster earns slow_down).
  })
}

/** Resolves when the workspace's link reports `state` (checked on every event, not by polling). */
function stateReached(app: WorkspaceSurface, wsId: string, state: string): Promise<void> {
  return new Promise((resolve) => {
    const unsubscribe = app.services.events.subscribe((event) => {
      if (event.type === 'org.state' && event.org?.state === state && event.workspaceId === wsId) {
        unsubscribe()
        resolve()
      }
    })
  })
}

/** Ours: approve → in_sync with every file on disk, in a fresh workspace. */
async function linkOnce(
  ctx: BenchContext,
  cp: Plane,
): Promise<{ ms: number; app: WorkspaceSurface; wsId: string; root: string }> {
  const dir = ctx.tempDir('org-link-ws')
  const app = await workspaceApp(dir)
  const wsId = app.services.workspaces.all[0]!.entry.id
  const started = await app.orgLinks.beginLink(wsId, cp.url, LINK_PRINCIPAL)
  const done = stateReached(app, wsId, 'in_sync')
  const t0 = performance.now()
  await cp.approve(started!.userCode)
  await done
  const ms = performance.now() - t0
  const root = app.services.workspaces.all[0]!.entry.path
  const count = readdirSync(join(root, '.opencode/skills')).length
  if (count !== SKILLS) throw new Error(`linked workspace holds ${count} skills, expected ${SKILLS}`)
  return { ms, app, wsId, root }
}

function walkFiles(dir: string, rel = ''): string[] {
  const out: string[] = []
  for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const child = rel ? `${rel}/${entry.name}` : entry.name
    if (entry.isDirectory()) out.push(...walkFiles(dir, child))
    else out.push(child)
  }
  return out
}

/** Floor: the same files read from a local folder and written through the write gate and import writer. */
async function copyThroughGate(app: WorkspaceSurface, source: string, prefix: string): Promise<number> {
  const ws = app.services.workspaces.all[0]!
  const t0 = performance.now()
  const changes: PlannedChange[] = walkFiles(source).map((rel) => {
    const path = `${prefix}/${rel}`
    const mode = statSync(join(source, rel)).mode
    return {
      kind: 'file',
      action: 'create',
      label: path,
      path,
      before: null,
      after: new Uint8Array(readFileSync(join(source, rel))),
      mode: modeFor((mode & 0o111) !== 0),
    }
  })
  await app.services.gate.run({
    workspace: ws,
    principal: LINK_PRINCIPAL,
    action: 'bench.copy',
    summary: 'copy',
    target: 'bench',
    paths: changes.map((c) => c.path),
    approval: 'skip',
    changes: async () => changes.map((c) => ({ path: c.path, after: c.after })),
    apply: () => applyImport(ws.entry.path, changes),
    record: async () => {
      await ws.tracker.commit('skills', { type: 'skill', name: 'bench', action: 'updated' })
      return { target: 'bench', summary: 'copy' }
    },
  })
  return performance.now() - t0
}

function writeLocalFolder(dir: string, items: BenchItem[]): void {
  for (const it of items)
    for (const f of it.files) {
      const path = join(dir, it.name, f.path)
      mkdirSync(join(path, '..'), { recursive: true })
      writeFileSync(path, f.content, { mode: f.executable ? 0o755 : 0o644 })
    }
}

async function run(ctx: BenchContext): Promise<void> {
  const rounds = Math.max(1, Math.min(ctx.settings.rounds, 3))
  const items = Array.from({ length: SKILLS }, (_, i) => item(i))
  ctx.log(`creating ${SKILLS} skills × ${FILES_PER_SKILL} files in the control plane`)
  const cp = await startPlane(ctx, items)
  const apps: WorkspaceSurface[] = []
  try {
    const local = ctx.tempDir('org-link-local')
    writeLocalFolder(local, items)
    ctx.log(`${SKILLS} skills × ${FILES_PER_SKILL} files, ${rounds} rounds`)

    const initial: Array<{ baseline: number; ours: number }> = []
    let linked: Awaited<ReturnType<typeof linkOnce>> | undefined
    for (let r = 0; r < rounds; r++) {
      const floorApp = await workspaceApp(ctx.tempDir('org-link-floor'))
      apps.push(floorApp)
      const measureFloor = () => copyThroughGate(floorApp, local, '.opencode/skills')
      let ours: number
      let baseline: number
      if (r % 2 === 0) {
        baseline = await measureFloor()
        linked = await linkOnce(ctx, cp)
        ours = linked.ms
      } else {
        linked = await linkOnce(ctx, cp)
        ours = linked.ms
        baseline = await measureFloor()
      }
      apps.push(linked.app)
      initial.push({ baseline, ours })
      printRound('1,000 skills into a fresh workspace ms', r, rounds, ours, baseline, 'ms')
    }
    ctx.record(
      makeFigure({
        caseName: 'org-link',
        name: `${SKILLS} delivered skills × ${FILES_PER_SKILL} files into a fresh linked workspace ms`,
        unit: 'ms',
        subject: 'device code approved → in_sync, files on disk',
        baselineLabel: 'the same files copied from a local folder through the write gate and import writer',
        rounds: initial,
        target: { op: '<=', value: 3 },
      }),
    )

    // Publications into the last linked workspace: one skill gets a new version each time.
    const { app, wsId, root } = linked!
    const pub: Array<{ baseline: number; ours: number }> = []
    const oneSkill = ctx.tempDir('org-link-one')
    for (let p = 0; p < PUBLICATIONS; p++) {
      const index = (p * 37) % SKILLS
      const version = p + 2
      items[index] = { ...items[index]!, files: [item(index, version).files[0]!, ...items[index]!.files.slice(1)] }
      const target = join(root, '.opencode/skills', items[index]!.name, 'SKILL.md')
      const applied = new Promise<void>((resolve) => {
        const unsubscribe = app.services.events.subscribe((event) => {
          // The gate's reload event follows the write at once; org.applied comes after the link's bookkeeping.
          if (event.workspaceId === wsId) {
            if (readFileSync(target, 'utf8').includes(`Version ${version}.`)) {
              unsubscribe()
              resolve()
            }
          }
        })
      })
      const t0 = performance.now()
      await cp.publish(index, version)
      await applied
      const ours = performance.now() - t0
      writeLocalFolder(oneSkill, [items[index]!])
      const baselineApp = apps[0]!
      const baseline = await copyThroughGate(baselineApp, join(oneSkill, items[index]!.name), `pub/${p}`)
      pub.push({ baseline, ours })
    }
    const oursMs = pub.map((x) => x.ours)
    ctx.log(`publication → disk ms: p50 ${round(median(oursMs))}, max ${round(Math.max(...oursMs))}`)
    ctx.record(
      makeFigure({
        caseName: 'org-link',
        name: `new version published → files on disk ms (p50 of ${PUBLICATIONS}, ${SKILLS} skills linked)`,
        unit: 'ms',
        subject: 'POST …/versions → delivery.changed → /v1/me/delivery → change set applied',
        baselineLabel: 'the same skill copied from a local folder through the write gate',
        rounds: pub,
        oursTarget: { op: '<=', value: 1000 },
        notes: [`max ${round(Math.max(...oursMs))} ms`],
      }),
    )
  } finally {
    for (const app of apps) await app.close().catch(() => {})
    await cp.close()
  }
}

export default defineCase({
  name: 'org-link',
  description:
    '1,000 delivered skills × 10 files into a fresh linked workspace vs the same copy through the write path (target <= 3); publication → disk p50 <= 1 s over 20',
  optional: true,
  run,
})
