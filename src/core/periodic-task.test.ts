import { assert, suite } from '../../tests/harness.ts'
import { createLogger } from './logger.ts'
import { startPeriodicTask } from './periodic-task.ts'

const test = suite('core/periodic-task')

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('a slow run is never overlapped, a failure is logged and the next tick runs again, and stop ends it', async () => {
  const lines: string[] = []
  const logger = createLogger({ format: 'json', write: (line) => lines.push(line) })
  let running = 0
  let most = 0
  let runs = 0
  const stop = startPeriodicTask(
    async () => {
      runs++
      running++
      most = Math.max(most, running)
      await sleep(35)
      running--
      if (runs === 1) throw new Error('first run fails')
    },
    { intervalMs: 10, firstAfterMs: 0, logger, failure: 'test sweep failed' },
  )
  await sleep(200)
  stop()
  const settled = runs
  await sleep(60)
  assert.is(most, 1, 'two runs never overlap')
  assert.ok(runs >= 2, `ran again after the failure (${runs} runs)`)
  assert.is(runs, settled, 'no run starts after stop')
  assert.is(lines.filter((line) => line.includes('test sweep failed')).length, 1)
  assert.ok(lines[0]!.includes('first run fails'))
})

test.run()
