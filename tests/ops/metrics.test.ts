/**
 * `GET /metrics` on the compiled binary in both modes: off by default, the token, the separate
 * listener, bounded label sets, `promtool check metrics`, and a real Prometheus server scraping
 * both modes and answering a PromQL query on a counter the test moved.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { openApiErrors } from '../openapi-check.ts'
import { assert, compiledBinary, startChild, suite, takeSse, tempDir, type ChildServer } from '../harness.ts'

const PROMETHEUS = '/usr/bin/prometheus'
const PROMTOOL = '/usr/bin/promtool'
const TOKEN = 'metrics-token-0123456789abcdef'

const test = suite('ops/metrics', { timeoutMs: 240_000 })
const dir = tempDir('svc-metrics-')
let binary = ''

test.before(async () => {
  binary = await compiledBinary()
})
test.after(() => dir.remove())

let seq = 0
async function start(mode: 'workspace' | 'control-plane', env: Record<string, string>): Promise<ChildServer> {
  const n = ++seq
  const home = join(dir.path, `home${n}`)
  const ws = join(dir.path, `ws${n}`)
  mkdirSync(ws, { recursive: true })
  mkdirSync(home, { recursive: true })
  return startChild(binary, ['--mode', mode, '--port', '0', '--data-dir', join(dir.path, `data${n}`)], {
    cwd: ws,
    env: { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), SERVICE_CONTROL_PLANE_CONFIG: undefined, ...env },
  })
}

async function promtoolCheck(text: string): Promise<{ code: number | null; output: string }> {
  const file = join(dir.path, `scrape-${++seq}.txt`)
  writeFileSync(file, text)
  const child = spawn('sh', ['-c', `${PROMTOOL} check metrics < "${file}"`], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d) => (output += d))
  child.stderr.on('data', (d) => (output += d))
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  return { code, output }
}

/** Series lines of one metric name (samples, not comments). */
function series(text: string, name: string): string[] {
  return text.split('\n').filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
}

test('metrics are off by default: /metrics is 404 in both modes', async () => {
  for (const mode of ['workspace', 'control-plane'] as const) {
    const child = await start(mode, {})
    try {
      const response = await fetch(`${child.url}/metrics`)
      assert.is(response.status, 404, mode)
      const doc = await (await fetch(`${child.url}/openapi.json`)).json()
      assert.not.ok('/metrics' in doc.paths, `${mode}: the document does not list /metrics`)
    } finally {
      await child.stop()
    }
  }
})

test('workspace mode: promtool accepts the scrape, and thousands of distinct paths add no series', async () => {
  const child = await start('workspace', { SERVICE_METRICS: '1' })
  try {
    const before = await (await fetch(`${child.url}/metrics`)).text()
    const check = await promtoolCheck(before)
    assert.is(check.code, 0, check.output)
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_open_fds',
      'service_event_loop_delay_seconds',
      'service_http_requests_in_flight',
      'service_http_requests_refused_total',
      'service_approvals_pending',
      'service_sse_streams_open',
      'service_org_links',
    ])
      assert.ok(series(before, name).length > 0, `${name} is exposed`)
    // Delivered workspaces by link state: one series per state, none linked yet.
    assert.equal(
      series(before, 'service_org_links').sort(),
      ['conflict', 'in_sync', 'linking', 'revoked', 'syncing', 'unreachable'].map(
        (s) => `service_org_links{state="${s}"} 0`,
      ),
    )
    const doc = await (await fetch(`${child.url}/openapi.json`)).json()
    assert.ok(doc.paths['/metrics']?.get, 'the document lists /metrics when it is served')
    assert.equal(await openApiErrors(doc), [])

    // Distinct unknown paths, distinct workspace ids, distinct methods, query strings: all of it
    // must land on a fixed set of label values.
    const marker = 'zz-unique'
    const requests: Promise<Response>[] = []
    for (let i = 0; i < 600; i++) {
      const path =
        i % 3 === 0
          ? `/${marker}-${i}/x?q=${i}`
          : i % 3 === 1
            ? `/workspace/ws_${marker}${i}/config`
            : `/w/${marker}${i}/workspace/x/skills`
      requests.push(fetch(`${child.url}${path}`, { method: i % 5 === 0 ? 'PURGE' : 'GET' }))
      if (requests.length >= 50) await Promise.all(requests.splice(0).map((r) => r.then((x) => x.arrayBuffer())))
    }
    await Promise.all(requests.map((r) => r.then((x) => x.arrayBuffer())))
    const after = await (await fetch(`${child.url}/metrics`)).text()
    assert.not.ok(after.includes(marker), 'no label carries a path or an id')
    const totals = series(after, 'service_http_requests_total')
    assert.ok(totals.length <= 12, `bounded request series: ${totals.join('\n')}`)
    assert.ok(
      totals.some((line) => line.includes('route="unmatched"')),
      'unknown paths count as one route',
    )
    assert.ok(
      totals.some((line) => line.includes('method="other"')),
      'unknown methods count as one method',
    )
    const buckets = series(after, 'service_http_request_duration_seconds_bucket')
    assert.ok(buckets.length <= 15 * 12, `bounded histogram series: ${buckets.length}`)
    assert.is((await promtoolCheck(after)).code, 0)
  } finally {
    await child.stop()
  }
})

test('control-plane mode: the token is required when set, and the jobs, Workers and pool gauges are there', async () => {
  const child = await start('control-plane', { SERVICE_METRICS: '1', SERVICE_METRICS_TOKEN: TOKEN })
  try {
    const none = await fetch(`${child.url}/metrics`)
    assert.is(none.status, 401)
    assert.is((await none.json()).code, 'unauthorized')
    const wrong = await fetch(`${child.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}x` } })
    assert.is(wrong.status, 401)
    // Sign up and create a job-free organization so the database has moved.
    const signUp = await fetch(`${child.url}/v1/auth/sign-up`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'owner@example.com', password: 'correct horse battery', name: 'Owner' }),
    })
    const session = `Bearer ${(await signUp.json()).session.token}`
    const json = { 'content-type': 'application/json', authorization: session }
    const org = await fetch(`${child.url}/v1/orgs`, { method: 'POST', headers: json, body: '{"name":"Metrics"}' })
    assert.is(org.status, 201)
    // A change written while a stream follows the feed is delivered live: its lag is observed.
    const feed = await fetch(`${child.url}/v1/events`, {
      headers: { authorization: session, accept: 'text/event-stream' },
    })
    assert.is(feed.status, 200)
    const skill = await fetch(`${child.url}/v1/config-objects`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        type: 'skill',
        sourceMode: 'cloud',
        title: 'lag',
        input: { rawSourceText: '---\nname: lag\ndescription: The lag skill\n---\n\nDo lag.\n' },
      }),
    })
    assert.is(skill.status, 201)
    const frames = await takeSse(feed, 1, 10_000, (frame) => frame.event === 'config_object.created')
    assert.is(frames.length, 1, 'the stream delivered the change')
    const ok = await fetch(`${child.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    assert.is(ok.status, 200)
    assert.match(ok.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
    const text = await ok.text()
    assert.is((await promtoolCheck(text)).code, 0)
    for (const name of [
      'service_database_pool_connections',
      'service_database_pool_in_use',
      'service_database_pool_waiting',
      'service_database_query_errors_total',
      'service_change_feed_subscribers',
      'service_sse_streams_open',
      'service_http_requests_total',
    ])
      assert.ok(series(text, name).length > 0, `${name} is exposed`)
    assert.ok(text.includes('# TYPE service_jobs gauge'), 'jobs by family and state')
    assert.ok(text.includes('# TYPE service_workers gauge'), 'Workers by state')
    assert.ok(text.includes('# TYPE service_change_feed_delivery_lag_seconds histogram'), 'delivery lag')
    const lagCount = series(text, 'service_change_feed_delivery_lag_seconds_count')
    assert.is(lagCount.length, 1, 'one series, no labels')
    assert.ok(Number(lagCount[0]!.split(' ')[1]) >= 1, `the live delivery was observed: ${lagCount[0]}`)
    assert.ok(
      series(text, 'service_http_requests_total').some((l) => l.includes('route="/v1/auth/sign-up"')),
      'requests are labelled by route template',
    )
  } finally {
    await child.stop()
  }
})

test('SERVICE_METRICS_LISTEN serves /metrics on its own address only', async () => {
  const child = await start('workspace', { SERVICE_METRICS: '1', SERVICE_METRICS_LISTEN: '127.0.0.1:0' })
  try {
    assert.is((await fetch(`${child.url}/metrics`)).status, 404, 'not on the main listener')
    const line = await waitFor(() => child.stdoutLines.find((l) => l.startsWith('metrics: ')))
    const url = line.slice('metrics: '.length)
    const response = await fetch(url)
    assert.is(response.status, 200)
    assert.ok((await response.text()).includes('service_http_requests_total'))
    assert.is((await fetch(url.replace('/metrics', '/health'))).status, 404, 'nothing else on it')
  } finally {
    await child.stop()
  }
})

test('a real Prometheus scrapes both modes and answers a PromQL query on the request counter', async () => {
  if (!existsSync(PROMETHEUS)) throw new Error(`${PROMETHEUS} is missing (Debian package prometheus)`)
  const workspace = await start('workspace', { SERVICE_METRICS: '1' })
  const controlPlane = await start('control-plane', { SERVICE_METRICS: '1', SERVICE_METRICS_TOKEN: TOKEN })
  const promDir = join(dir.path, 'prometheus')
  mkdirSync(promDir)
  const port = await freePort()
  const target = (url: string) => new URL(url).host
  writeFileSync(
    join(promDir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: workspace',
      `    static_configs: [{ targets: ['${target(workspace.url)}'] }]`,
      '  - job_name: control-plane',
      '    authorization:',
      `      credentials: ${TOKEN}`,
      `    static_configs: [{ targets: ['${target(controlPlane.url)}'] }]`,
      '',
    ].join('\n'),
  )
  const prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(promDir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(promDir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let log = ''
  prometheus.stderr.on('data', (d) => (log += d))
  try {
    for (const child of [workspace, controlPlane])
      for (let i = 0; i < 25; i++) assert.is((await fetch(`${child.url}/openapi.json`)).status, 200)
    const query = async (
      promql: string,
    ): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> => {
      const response = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`)
      const body = await response.json()
      return body.status === 'success' ? body.data.result : []
    }
    const moved = await waitFor(
      async () => {
        const result = await query(
          'sum by (job) (service_http_requests_total{route="/openapi.json",status_class="2xx"})',
        )
        const jobs = Object.fromEntries(result.map((r) => [r.metric.job, Number(r.value[1])]))
        return (jobs.workspace ?? 0) >= 25 && (jobs['control-plane'] ?? 0) >= 25 ? jobs : undefined
      },
      60_000,
      () => `Prometheus log: ${log.slice(-2000)}`,
    )
    assert.ok(moved.workspace! >= 25 && moved['control-plane']! >= 25)
    const up = await query('up')
    assert.is(up.length, 2)
    assert.ok(
      up.every((r) => r.value[1] === '1'),
      'both targets up',
    )
  } finally {
    prometheus.kill('SIGTERM')
    await new Promise((resolve) => prometheus.once('exit', resolve))
    await workspace.stop()
    await controlPlane.stop()
  }
})

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

async function waitFor<T>(
  read: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
  explain: () => string = () => '',
): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await read()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error(`timed out waiting; ${explain()}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

test.run()
