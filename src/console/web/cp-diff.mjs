// A line diff for comparing two versions of a config object (longest common subsequence), and a
// skill's file changes between two versions.
import { filesOf, sizeText } from './cp-skill-files.mjs'
import { h } from './dom.mjs'

/** Beyond this many lines on either side the table would cost too much memory; say so instead. */
const MAX_LINES = 2000

/** `[{op: ' '|'-'|'+', text}]` turning `before` into `after`, or null when too large. */
export function lineDiff(before, after) {
  const a = before.split('\n')
  const b = after.split('\n')
  if (a.length > MAX_LINES || b.length > MAX_LINES) return null
  const width = b.length + 1
  // lengths[i][j] = LCS length of a[i..] and b[j..], filled from the end.
  const lengths = new Uint16Array((a.length + 1) * width)
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lengths[i * width + j] =
        a[i] === b[j]
          ? lengths[(i + 1) * width + j + 1] + 1
          : Math.max(lengths[(i + 1) * width + j], lengths[i * width + j + 1])
  const out = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', text: a[i] })
      i++
      j++
    } else if (lengths[(i + 1) * width + j] >= lengths[i * width + j + 1]) out.push({ op: '-', text: a[i++] })
    else out.push({ op: '+', text: b[j++] })
  }
  while (i < a.length) out.push({ op: '-', text: a[i++] })
  while (j < b.length) out.push({ op: '+', text: b[j++] })
  return out
}

/** The diff as a focusable block; changed lines are marked by their prefix, not colour alone. */
export function diffBlock(before, after, label) {
  const lines = lineDiff(before, after)
  if (!lines) return h('p', { class: 'muted' }, `Too large to compare line by line (over ${MAX_LINES} lines).`)
  const added = lines.filter((l) => l.op === '+').length
  const removed = lines.filter((l) => l.op === '-').length
  return h(
    'div',
    null,
    h('p', { class: 'muted' }, `${added} line${added === 1 ? '' : 's'} added, ${removed} removed`),
    h(
      'pre',
      { class: 'json diff', tabindex: '0', 'aria-label': label },
      lines.map((line) =>
        h('span', { class: line.op === '+' ? 'add' : line.op === '-' ? 'del' : 'same' }, `${line.op} ${line.text}`),
      ),
    ),
  )
}

/** File changes from one version's files to another's, one line each (added, removed, changed, mode). */
async function fileChanges(from, to) {
  const [a, b] = await Promise.all([filesOf(from), filesOf(to)])
  const before = new Map(a.map((f) => [f.path, f]))
  const after = new Map(b.map((f) => [f.path, f]))
  const lines = []
  for (const path of [...new Set([...before.keys(), ...after.keys()])].sort()) {
    const x = before.get(path)
    const y = after.get(path)
    if (!x) lines.push(`+ ${path} added (${sizeText(y.bytes.length)}${y.executable ? ', executable' : ''})`)
    else if (!y) lines.push(`- ${path} removed`)
    else {
      if (x.sha256 !== y.sha256)
        lines.push(`~ ${path} changed (${sizeText(x.bytes.length)} → ${sizeText(y.bytes.length)})`)
      if (x.executable !== y.executable) lines.push(`~ ${path} executable: ${x.executable} → ${y.executable}`)
    }
  }
  return lines
}

/** A skill's file changes between two versions, as a list (or a line saying there are none). */
export function fileChangesBlock(from, to, label) {
  const node = h('div', null, h('p', { class: 'muted' }, 'Comparing files…'))
  fileChanges(from, to).then(
    (lines) =>
      node.replaceChildren(
        lines.length
          ? h(
              'ul',
              { class: 'plain', 'aria-label': label },
              lines.map((line) => h('li', null, h('code', null, line))),
            )
          : h('p', { class: 'muted' }, 'No file changes beside SKILL.md.'),
      ),
    (error) => node.replaceChildren(h('p', { class: 'error', role: 'alert' }, String(error?.message ?? error))),
  )
  return node
}
