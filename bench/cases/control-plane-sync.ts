/**
 * Connector sync and job-runner cost, in process on a real SQLite file.
 *
 * 1. Sync of a local git repository with 1,000 skills (each its own config object and version):
 *    wall time from `POST …/sync` (202) to the event reading `completed`, against reading the
 *    same data with git alone (bare shallow clone + `ls-tree` + one `cat-file --batch`) in the
 *    same round, so the ratio is what sync adds on top of fetching. Config objects created per
 *    second are in the notes. Each round syncs a fresh target, so every round creates 1,000.
 * 2. Job-runner overhead: time per job through the durable runner (enqueue, claim by CAS,
 *    lease, run a no-op, record success) as a ratio to a bare insert + update pair on the same
 *    table and connection, measured back to back.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFixtureRepo, skillText } from '../../fixtures/git-repos/git-repo.ts'
import { createControlPlaneApp } from '../../src/control-plane/app.ts'
import { loadControlPlaneConfig } from '../../src/control-plane/config.ts'
import { enqueueJob } from '../../src/control-plane/jobs/job-queue.ts'
import { JobRunner } from '../../src/control-plane/jobs/job-runner.ts'
import { newId } from '../../src/core/ids.ts'
import { silentLogger } from '../../src/core/logger.ts'
import { defineCase, type BenchContext } from '../lib/bench-case.ts'
import { makeFigure } from '../lib/figure.ts'
import { printRound } from '../lib/results-printer.ts'
import { median, round } from '../lib/stats.ts'

const SKILLS = 1000
const JOBS = 400

async function call(
  app: { fetch(r: Request): Response | Promise<Response> },
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<any> {
  const headers: Record<string, string> = {}
  if (token) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  const res = await app.fetch(
    new Request(`http://bench${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`)
  return text ? JSON.parse(text) : null
}

function gitRead(url: string): number {
  const dir = mkdtempSync(join(tmpdir(), 'bench-git-'))
  const started = performance.now()
  try {
    execFileSync(
      'git',
      ['-c', 'protocol.file.allow=always', 'clone', '--quiet', '--bare', '--depth', '1', '--single-branch', url, dir],
      { stdio: 'ignore' },
    )
    const tree = execFileSync('git', ['ls-tree', '-r', '-z', 'HEAD'], { cwd: dir }).toString('utf8')
    const shas =
      tree
        .split('\0')
        .filter(Boolean)
        .map((line) => line.split(/\s+/)[2])
        .join('\n') + '\n'
    execFileSync('git', ['cat-file', '--batch'], { cwd: dir, input: shas, maxBuffer: 256 * 1024 * 1024 })
    return performance.now() - started
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function run(ctx: BenchContext): Promise<void> {
  const s = ctx.settings
  const dir = ctx.tempDir('control-plane-sync')
  const files: Record<string, string> = {}
  for (let i = 0; i < SKILLS; i++)
    files[`skills/skill-${i}/SKILL.md`] = skillText(
      `skill-${i}`,
      `Skill number ${i} for the sync benchmark`,
      `Body of skill ${i}.\n`.repeat(5),
    )
  ctx.log(`creating a git repository with ${SKILLS} skills`)
  const repo = createFixtureRepo(join(dir, 'git'), files)
  const base = loadControlPlaneConfig({}, {}, dir)
  const app = await createControlPlaneApp(
    {
      ...base,
      dataDir: join(dir, 'data'),
      databasePath: join(dir, 'data', 'control-plane.sqlite'),
      logRequests: false,
      openSignUp: true,
      file: { ...base.file, jobs: { pollIntervalMs: 20 }, connectors: { allowFileUrls: true } },
    },
    { logger: silentLogger },
  )
  try {
    const signedUp = await call(app, 'POST', '/v1/auth/sign-up', null, {
      email: 'owner@bench.test',
      password: 'bench password',
      name: 'Owner',
    })
    const token: string = signedUp.session.token
    await call(app, 'POST', '/v1/orgs', token, { name: 'Bench' })
    const account = await call(app, 'POST', '/v1/connector-accounts', token, {
      connectorType: 'git',
      remoteId: 'local',
      displayName: 'Local',
    })
    const syncRounds: Array<{ baseline: number; ours: number }> = []
    const perSecond: number[] = []
    for (let r = 1; r <= s.rounds; r++) {
      const instance = await call(app, 'POST', '/v1/connector-instances', token, {
        connectorAccountId: account.item.id,
        connectorType: 'git',
        name: `round ${r}`,
      })
      const target = await call(app, 'POST', `/v1/connector-instances/${instance.item.id}/targets`, token, {
        connectorType: 'git',
        remoteId: repo.url,
        targetKind: 'repository_branch',
        config: {},
      })
      await call(app, 'POST', `/v1/connector-targets/${target.item.id}/mappings`, token, {
        mappingKind: 'path',
        selector: 'skills/*/SKILL.md',
        objectType: 'skill',
      })
      const baselineMs = gitRead(repo.url)
      const started = performance.now()
      const accepted = await call(app, 'POST', `/v1/connector-targets/${target.item.id}/sync`, token)
      let event = accepted.item
      while (event.status === 'queued' || event.status === 'running') {
        await new Promise((resolve) => setTimeout(resolve, 5))
        event = (await call(app, 'GET', `/v1/connector-sync-events/${accepted.item.id}`, token)).item
      }
      const ms = performance.now() - started
      if (event.status !== 'completed' || event.counts.created !== SKILLS)
        throw new Error(`sync ended ${event.status} with ${JSON.stringify(event.counts)}`)
      syncRounds.push({ baseline: baselineMs, ours: ms })
      perSecond.push(SKILLS / (ms / 1000))
      printRound('sync of 1,000 skills (ms)', r - 1, s.rounds, ms, baselineMs, 'ms')
    }
    ctx.record(
      makeFigure({
        caseName: 'control-plane-sync',
        name: `sync of ${SKILLS} skills, wall time (ms)`,
        unit: 'ms',
        subject: 'POST /v1/connector-targets/:id/sync → completed (git file:// repository, in process)',
        baselineLabel: 'git clone --depth 1 + ls-tree + cat-file --batch of the same repository',
        rounds: syncRounds,
        notes: [
          `config objects created per second: median ${round(median(perSecond), 0)} (each with its first version and search terms)`,
        ],
        extra: { configObjectsPerSecond: perSecond.map((x) => round(x, 1)) },
      }),
    )

    // Job-runner overhead per job vs a bare insert + update pair.
    const db = app.deps.db
    const runner = new JobRunner({
      db,
      now: Date.now,
      settings: {
        pollIntervalMs: 20,
        leaseMs: 30_000,
        backoff: { baseMs: 1000, capMs: 1000, jitter: 0 },
        concurrency: 1,
        stopGraceMs: 100,
      },
      logger: silentLogger,
    })
    let finished = 0
    let allDone: () => void = () => {}
    runner.register({
      kind: 'bench.noop',
      async run() {
        if (++finished === JOBS) allDone()
        return null
      },
    })
    runner.start()
    const jobRounds: Array<{ baseline: number; ours: number }> = []
    for (let r = 1; r <= s.rounds; r++) {
      const bareStart = performance.now()
      for (let i = 0; i < JOBS; i++) {
        const id = newId('job')
        const now = new Date().toISOString()
        await db
          .insertInto('job')
          .values({
            id,
            org_id: null,
            kind: 'bench.bare',
            subject_id: null,
            payload: '{}',
            status: 'queued',
            attempts: 0,
            max_attempts: 1,
            deadline_ms: 1000,
            run_at: now,
            locked_by: null,
            lease_until: null,
            last_error: null,
            last_reason: null,
            result: null,
            created_at: now,
            updated_at: now,
            started_at: null,
            finished_at: null,
          })
          .execute()
        await db.updateTable('job').set({ status: 'succeeded', finished_at: now }).where('id', '=', id).execute()
      }
      const bareMs = (performance.now() - bareStart) / JOBS
      finished = 0
      const done = new Promise<void>((resolve) => {
        allDone = resolve
      })
      const runStart = performance.now()
      for (let i = 0; i < JOBS; i++) {
        await enqueueJob(db, Date.now(), { kind: 'bench.noop', orgId: null, maxAttempts: 1, deadlineMs: 10_000 })
        runner.wake()
      }
      await done
      while (
        await db
          .selectFrom('job')
          .select('id')
          .where('kind', '=', 'bench.noop')
          .where('status', '!=', 'succeeded')
          .executeTakeFirst()
      )
        await new Promise((resolve) => setTimeout(resolve, 2))
      const jobMs = (performance.now() - runStart) / JOBS
      jobRounds.push({ baseline: bareMs, ours: jobMs })
      printRound('job-runner ms per job', r - 1, s.rounds, jobMs, bareMs, 'ms')
    }
    await runner.stop()
    ctx.record(
      makeFigure({
        caseName: 'control-plane-sync',
        name: 'job-runner cost per job (ms)',
        unit: 'ms',
        subject: `${JOBS} no-op jobs through JobRunner (enqueue, CAS claim, lease, success), concurrency 1`,
        baselineLabel: 'bare insert + update of a job row',
        rounds: jobRounds,
        notes: ['ratio = runner cost per job / bare insert+update pair; both on the same SQLite connection'],
      }),
    )
  } finally {
    await app.close()
  }
}

export default defineCase({
  name: 'control-plane-sync',
  description:
    'connector sync of 1,000 skills (wall time vs raw git read; objects/s) and job-runner overhead per job vs a bare insert+update pair',
  run,
})
