import { assert, suite } from '../../tests/harness.ts'
import { MetricsRegistry } from './metrics-registry.ts'

const test = suite('core/metrics-registry')

test('counters, callback gauges and histograms render in the text format, in registration order', async () => {
  const registry = new MetricsRegistry()
  const hits = registry.counter('demo_hits_total', 'Hits.', ['kind'])
  hits.inc({ kind: 'a' })
  hits.inc({ kind: 'a' }, 2)
  hits.inc({ kind: 'b' })
  registry.gauge('demo_depth', 'Depth.', () => 7)
  registry.gauge('demo_states', 'By state.', async () => [{ labels: { state: 'on' }, value: 2 }], ['state'])
  const latency = registry.histogram('demo_seconds', 'Latency.', [], [0.1, 1])
  latency.observe({}, 0.05)
  latency.observe({}, 0.5)
  latency.observe({}, 5)
  const text = await registry.render()
  assert.is(
    text,
    [
      '# HELP demo_hits_total Hits.',
      '# TYPE demo_hits_total counter',
      'demo_hits_total{kind="a"} 3',
      'demo_hits_total{kind="b"} 1',
      '# HELP demo_depth Depth.',
      '# TYPE demo_depth gauge',
      'demo_depth 7',
      '# HELP demo_states By state.',
      '# TYPE demo_states gauge',
      'demo_states{state="on"} 2',
      '# HELP demo_seconds Latency.',
      '# TYPE demo_seconds histogram',
      'demo_seconds_bucket{le="0.1"} 1',
      'demo_seconds_bucket{le="1"} 2',
      'demo_seconds_bucket{le="+Inf"} 3',
      'demo_seconds_sum 5.55',
      'demo_seconds_count 3',
      '',
    ].join('\n'),
  )
})

test('label values are escaped, and a gauge whose reading fails is left out instead of failing the scrape', async () => {
  const registry = new MetricsRegistry()
  registry.counter('demo_total', 'Help with a \\ backslash\nand a newline.', ['v']).inc({ v: 'a"b\\c\nd' })
  registry.gauge('demo_broken', 'Throws.', () => {
    throw new Error('database gone')
  })
  registry.gauge('demo_rejects', 'Rejects.', () => Promise.reject(new Error('database gone')))
  const text = await registry.render()
  assert.ok(text.includes('# HELP demo_total Help with a \\\\ backslash\\nand a newline.'))
  assert.ok(text.includes('demo_total{v="a\\"b\\\\c\\nd"} 1'))
  assert.ok(text.includes('# TYPE demo_broken gauge\n# HELP demo_rejects'))
})

test('names are checked once at registration: bad names, reserved labels and duplicates are refused', () => {
  const registry = new MetricsRegistry()
  assert.throws(() => registry.counter('bad-name_total', 'x'), /invalid metric name/)
  assert.throws(() => registry.histogram('demo_seconds', 'x', ['le']), /invalid label name/)
  registry.gauge('demo_once', 'x', () => 1)
  assert.throws(() => registry.gauge('demo_once', 'x', () => 1), /registered twice/)
})

test.run()
