/**
 * `service_org_links{state}`: the workspace's delivered workspaces by link state, read from the
 * live links on each scrape (a Worker's own link here, against a fake control plane).
 */
import { assert, suite, tempDir } from '../../../tests/harness.ts'
import { MetricsRegistry } from '../../core/metrics-registry.ts'
import { requestMetrics } from '../../core/request-metrics.ts'
import { FAST_LINK, startFakeControlPlane } from '../testing/fake-control-plane.ts'
import { eventually, startTestServer } from '../testing/test-kit.ts'

const test = suite('workspace/org-link-metrics', { timeoutMs: 30_000 })

function linkSeries(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('service_org_links{'))
    .sort()
}

test('service_org_links counts the linked workspace under its state as it moves, every state always present', async () => {
  const cp = await startFakeControlPlane()
  cp.acceptToken('wka_metrics_token')
  cp.deliver([])
  const home = tempDir('svc-link-metrics-')
  const registry = new MetricsRegistry()
  const s = await startTestServer({
    fixture: false,
    app: {
      orgLinkTiming: FAST_LINK,
      metrics: { registry, requests: requestMetrics(registry) },
      env: {
        SERVICE_CONTROL_PLANE_URL: cp.url,
        SERVICE_WORKER_ID: 'wrk_metrics',
        SERVICE_WORKER_ACTIVITY_TOKEN: 'wka_metrics_token',
        HOME: home.path,
      },
    },
  })
  try {
    let series: string[] = []
    await eventually(
      async () => {
        series = linkSeries(await registry.render())
        return series.includes('service_org_links{state="in_sync"} 1')
      },
      5000,
      'the link is in sync',
    )
    assert.equal(series, [
      'service_org_links{state="conflict"} 0',
      'service_org_links{state="in_sync"} 1',
      'service_org_links{state="linking"} 0',
      'service_org_links{state="revoked"} 0',
      'service_org_links{state="syncing"} 0',
      'service_org_links{state="unreachable"} 0',
    ])
    assert.ok((await registry.render()).includes('# TYPE service_org_links gauge'))

    // The control plane goes away: the same workspace moves to `unreachable`.
    await cp.close()
    await eventually(
      async () => linkSeries(await registry.render()).includes('service_org_links{state="unreachable"} 1'),
      8000,
      'the link is unreachable',
    )
    assert.ok(linkSeries(await registry.render()).includes('service_org_links{state="in_sync"} 0'))
  } finally {
    await s.dispose()
    await cp.close()
    home.remove()
  }
})

test.run()
