import { assert, suite } from '../../tests/harness.ts'
import { loadMetricsSettings } from './metrics-settings.ts'
import { ConfigError } from './settings.ts'

const test = suite('core/metrics-settings')

test('off by default; the environment wins over the config file key by key', () => {
  assert.equal(loadMetricsSettings({}, undefined), { enabled: false })
  assert.equal(loadMetricsSettings({}, { enabled: true, listen: '127.0.0.1:9100' }), {
    enabled: true,
    listen: { host: '127.0.0.1', port: 9100 },
  })
  assert.equal(
    loadMetricsSettings(
      { SERVICE_METRICS: '0', SERVICE_METRICS_LISTEN: '[::1]:0', SERVICE_METRICS_TOKEN: 'x'.repeat(16) },
      { enabled: true, listen: '127.0.0.1:9100' },
    ),
    { enabled: false, token: 'x'.repeat(16), listen: { host: '::1', port: 0 } },
  )
})

test('a bad value stops start-up naming the variable, and a short token is never echoed', () => {
  assert.throws(() => loadMetricsSettings({ SERVICE_METRICS: 'maybe' }, undefined), /SERVICE_METRICS/)
  assert.throws(() => loadMetricsSettings({ SERVICE_METRICS_LISTEN: 'localhost' }, undefined), /SERVICE_METRICS_LISTEN/)
  assert.throws(() => loadMetricsSettings({ SERVICE_METRICS_LISTEN: 'localhost:70000' }, undefined), /0-65535/)
  try {
    loadMetricsSettings({ SERVICE_METRICS_TOKEN: 'short-secret' }, undefined)
    assert.unreachable('a short token is refused')
  } catch (error) {
    assert.instance(error, ConfigError)
    assert.not.ok((error as Error).message.includes('short-secret'))
  }
})

test.run()
