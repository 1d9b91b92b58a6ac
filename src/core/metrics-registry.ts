/**
 * A small metrics registry written out in the Prometheus text exposition format (version 0.0.4).
 *
 * Counters and histograms are updated where things happen; gauges are callbacks read on each
 * scrape, so a subsystem registers one line (`registry.gauge(name, help, read)`) and pays nothing
 * between scrapes. Label values must come from small fixed sets (states, families, route
 * templates, status classes): never ids, paths or anything a client sends.
 * @module
 */

/** Label names to values; each metric declares its label names once. */
export type Labels = Readonly<Record<string, string>>

/** One value of a gauge family: its labels and its value. */
export interface Sample {
  labels: Labels
  value: number
}

/** What a gauge callback may return: one value, or one per label set; possibly after a query. */
export type GaugeReading = number | ReadonlyArray<Sample> | Promise<number | ReadonlyArray<Sample>>

/** A monotonically increasing count. */
export interface Counter {
  inc(labels?: Labels, by?: number): void
  /** The series of `labels`, bound once: incrementing it skips the label lookup (hot paths). */
  child(labels: Labels): { inc(by?: number): void }
}

/** A distribution of observed values (seconds, bytes) in cumulative buckets. */
export interface Histogram {
  observe(labels: Labels, value: number): void
  /** The series of `labels`, bound once (hot paths). */
  child(labels: Labels): { observe(value: number): void }
}

/** Latency buckets in seconds, from a fast local read to a slow upload. */
export const SECONDS_BUCKETS: ReadonlyArray<number> = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/

interface Family {
  name: string
  help: string
  type: 'counter' | 'gauge' | 'histogram'
  render(): string | Promise<string>
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')
}

function escapeValue(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

function formatNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (value === Number.POSITIVE_INFINITY) return '+Inf'
  if (value === Number.NEGATIVE_INFINITY) return '-Inf'
  return String(value)
}

/** `{a="x",b="y"}` in the declared label order, or the empty string. */
function labelText(names: ReadonlyArray<string>, labels: Labels | undefined, extra?: string): string {
  const parts = names.map((name) => `${name}="${escapeValue(labels?.[name] ?? '')}"`)
  if (extra) parts.push(extra)
  return parts.length ? `{${parts.join(',')}}` : ''
}

function keyOf(names: ReadonlyArray<string>, labels: Labels | undefined): string {
  return names.map((name) => labels?.[name] ?? '').join('\u0000')
}

function checkLabels(metric: string, names: ReadonlyArray<string>): void {
  for (const name of names) {
    if (!LABEL.test(name) || name.startsWith('__') || name === 'le')
      throw new Error(`metric ${metric}: invalid label name ${name}`)
  }
}

/** The registry of one process; render it with {@link MetricsRegistry.render}. */
export class MetricsRegistry {
  readonly #families = new Map<string, Family>()

  #add(family: Family): void {
    if (!NAME.test(family.name)) throw new Error(`invalid metric name ${family.name}`)
    if (this.#families.has(family.name)) throw new Error(`metric ${family.name} registered twice`)
    this.#families.set(family.name, family)
  }

  /** Names of the registered metric families (tests and docs). */
  names(): string[] {
    return [...this.#families.keys()]
  }

  /** A counter; its name should end in `_total`. */
  counter(name: string, help: string, labelNames: ReadonlyArray<string> = []): Counter {
    checkLabels(name, labelNames)
    const values = new Map<string, { labels: Labels | undefined; value: number }>()
    this.#add({
      name,
      help,
      type: 'counter',
      render: () => {
        if (values.size === 0 && labelNames.length === 0) return `${name} 0\n`
        let out = ''
        for (const { labels, value } of values.values())
          out += `${name}${labelText(labelNames, labels)} ${formatNumber(value)}\n`
        return out
      },
    })
    const entryOf = (labels: Labels | undefined) => {
      const key = keyOf(labelNames, labels)
      let entry = values.get(key)
      if (!entry) values.set(key, (entry = { labels, value: 0 }))
      return entry
    }
    return {
      inc(labels, by = 1) {
        entryOf(labels).value += by
      },
      child(labels) {
        const entry = entryOf(labels)
        return {
          inc(by = 1) {
            entry.value += by
          },
        }
      },
    }
  }

  /**
   * A gauge read on every scrape: `read` returns the current value, or one value per label set
   * (for example one per state), and may query a database. A reading that fails is left out of
   * that scrape rather than failing it.
   */
  gauge(name: string, help: string, read: () => GaugeReading, labelNames: ReadonlyArray<string> = []): void {
    this.#metricFromCallback(name, help, 'gauge', read, labelNames)
  }

  /** A counter whose total is kept elsewhere (a driver's error count, the process's CPU time). */
  counterFrom(name: string, help: string, read: () => GaugeReading, labelNames: ReadonlyArray<string> = []): void {
    this.#metricFromCallback(name, help, 'counter', read, labelNames)
  }

  #metricFromCallback(
    name: string,
    help: string,
    type: 'gauge' | 'counter',
    read: () => GaugeReading,
    labelNames: ReadonlyArray<string>,
  ): void {
    checkLabels(name, labelNames)
    const format = (reading: number | ReadonlyArray<Sample>): string => {
      if (typeof reading === 'number') return `${name} ${formatNumber(reading)}\n`
      let out = ''
      for (const sample of reading)
        out += `${name}${labelText(labelNames, sample.labels)} ${formatNumber(sample.value)}\n`
      return out
    }
    this.#add({
      name,
      help,
      type,
      render: () => {
        let reading: GaugeReading
        try {
          reading = read()
        } catch {
          return ''
        }
        return reading instanceof Promise ? reading.then(format, () => '') : format(reading)
      },
    })
  }

  /** A histogram with the given upper bounds (`+Inf` is added). Observations are in base units. */
  histogram(
    name: string,
    help: string,
    labelNames: ReadonlyArray<string> = [],
    buckets: ReadonlyArray<number> = SECONDS_BUCKETS,
  ): Histogram {
    checkLabels(name, labelNames)
    const bounds = [...buckets].sort((a, b) => a - b)
    const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>()
    this.#add({
      name,
      help,
      type: 'histogram',
      render: () => {
        let out = ''
        for (const { labels, counts, sum, count } of series.values()) {
          let cumulative = 0
          for (let i = 0; i < bounds.length; i++) {
            cumulative += counts[i] as number
            out += `${name}_bucket${labelText(labelNames, labels, `le="${formatNumber(bounds[i] as number)}"`)} ${cumulative}\n`
          }
          out += `${name}_bucket${labelText(labelNames, labels, 'le="+Inf"')} ${count}\n`
          out += `${name}_sum${labelText(labelNames, labels)} ${formatNumber(sum)}\n`
          out += `${name}_count${labelText(labelNames, labels)} ${count}\n`
        }
        return out
      },
    })
    const entryOf = (labels: Labels) => {
      const key = keyOf(labelNames, labels)
      let entry = series.get(key)
      if (!entry) series.set(key, (entry = { labels, counts: bounds.map(() => 0), sum: 0, count: 0 }))
      return entry
    }
    const record = (entry: { counts: number[]; sum: number; count: number }, value: number) => {
      entry.sum += value
      entry.count++
      for (let i = 0; i < bounds.length; i++) {
        if (value <= (bounds[i] as number)) {
          ;(entry.counts[i] as number)++
          break
        }
      }
    }
    return {
      observe(labels, value) {
        record(entryOf(labels), value)
      },
      child(labels) {
        const entry = entryOf(labels)
        return { observe: (value) => record(entry, value) }
      },
    }
  }

  /** Every family in the text exposition format, gauges read now. */
  async render(): Promise<string> {
    const bodies = await Promise.all([...this.#families.values()].map((family) => family.render()))
    let out = ''
    let i = 0
    for (const family of this.#families.values()) {
      out += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n${bodies[i++]}`
    }
    return out
  }
}

/** The content type of {@link MetricsRegistry.render}'s output. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
