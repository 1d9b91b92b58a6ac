/**
 * Line diffs in the unified format (`diff -u`): Myers' O((N+M)·D) algorithm over lines, hunks with
 * three lines of context. Bounded: past `maxEdits` differing lines the diff is not worth its cost
 * (nor readable), and the caller gets null.
 * @module
 */

type Op = { op: ' ' | '-' | '+'; text: string }

/** Lines with their `\n` kept, so a last line without one differs from the same line with it. */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? []
}

/** The shortest edit script from `a` to `b` (Myers), or null past `maxEdits`. */
function editScript(a: string[], b: string[], maxEdits: number): Op[] | null {
  const n = a.length
  const m = b.length
  const max = Math.min(n + m, maxEdits)
  const offset = max + 1
  let v = new Int32Array(2 * max + 3)
  const trace: Int32Array[] = []
  let found = -1
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice())
    const next = v
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      next[offset + k] = x
      if (x >= n && y >= m) {
        found = d
        break
      }
    }
    v = next
  }
  if (found < 0) return null
  // Walk the trace back from (n, m) to (0, 0).
  const ops: Op[] = []
  let x = n
  let y = m
  for (let d = found; d > 0; d--) {
    const prev = trace[d]!
    const k = x - y
    const down = k === -d || (k !== d && prev[offset + k - 1]! < prev[offset + k + 1]!)
    const prevK = down ? k + 1 : k - 1
    const prevX = prev[offset + prevK]!
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push({ op: ' ', text: a[--x] ?? '' })
      y--
    }
    if (down) ops.push({ op: '+', text: b[--y] ?? '' })
    else ops.push({ op: '-', text: a[--x] ?? '' })
  }
  while (x > 0 && y > 0) {
    ops.push({ op: ' ', text: a[--x] ?? '' })
    y--
  }
  return ops.reverse()
}

/**
 * `before` → `after` as a unified diff with `---`/`+++` headers naming `path`; '' when equal, null
 * when more than `maxEdits` lines differ. A missing final newline is marked as `diff` marks it.
 */
export function unifiedDiff(
  path: string,
  before: string | null,
  after: string | null,
  options: { context?: number; maxEdits?: number } = {},
): string | null {
  if (before === after) return ''
  const context = options.context ?? 3
  const a = splitLines(before ?? '')
  const b = splitLines(after ?? '')
  const ops = editScript(a, b, options.maxEdits ?? 2000)
  if (!ops) return null
  const out = [
    `--- ${before === null ? '/dev/null' : `a/${path}`}`,
    `+++ ${after === null ? '/dev/null' : `b/${path}`}`,
  ]
  // Indexes of changed ops, grouped into hunks whose context windows touch.
  let i = 0
  let aLine = 0
  let bLine = 0
  const positions = ops.map((op) => {
    const at = { a: aLine, b: bLine }
    if (op.op !== '+') aLine++
    if (op.op !== '-') bLine++
    return at
  })
  while (i < ops.length) {
    if (ops[i]!.op === ' ') {
      i++
      continue
    }
    const start = Math.max(0, i - context)
    let end = i
    // Extend while another change lies within 2×context of the last one.
    for (let j = i; j < ops.length; j++) {
      if (ops[j]!.op !== ' ') end = j
      else if (j - end > 2 * context) break
    }
    const stop = Math.min(ops.length, end + context + 1)
    const slice = ops.slice(start, stop)
    const aCount = slice.filter((o) => o.op !== '+').length
    const bCount = slice.filter((o) => o.op !== '-').length
    const first = positions[start]!
    const aStart = aCount ? first.a + 1 : first.a
    const bStart = bCount ? first.b + 1 : first.b
    out.push(`@@ -${aStart},${aCount} +${bStart},${bCount} @@`)
    for (const o of slice) {
      if (o.text.endsWith('\n')) out.push(`${o.op}${o.text.slice(0, -1)}`)
      else out.push(`${o.op}${o.text}`, '\\ No newline at end of file')
    }
    i = stop
  }
  return `${out.join('\n')}\n`
}
