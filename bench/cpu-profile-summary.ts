/**
 * Ranks the functions of a `.cpuprofile` (from `bun --cpu-prof`) by self time and by inclusive
 * time, as shares of all samples.
 *
 * Usage: bun bench/cpu-profile-summary.ts <file.cpuprofile> [top self = 30] [top inclusive = 50]
 *
 * Why: DevTools shows one profile at a time; this prints the ranking the profile method in
 * bench/README.md compares before and after a change.
 */
import { readFileSync } from 'node:fs'

const file = process.argv[2]
if (!file) {
  console.error('usage: bun bench/cpu-profile-summary.ts <file.cpuprofile> [topSelf] [topInclusive]')
  process.exit(2)
}

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id)
const selfById = new Map<number, number>()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!
  selfById.set(id, (selfById.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
}

const name = (n: ProfileNode) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber}`
const self = new Map<string, number>()
const inclusive = new Map<string, number>()
let total = 0
for (const [id, time] of selfById) {
  total += time
  const key = name(nodes.get(id)!)
  self.set(key, (self.get(key) ?? 0) + time)
  // A function counted once per sample even when it recurses.
  const seen = new Set<string>()
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const k = name(nodes.get(at)!)
    if (seen.has(k)) continue
    seen.add(k)
    inclusive.set(k, (inclusive.get(k) ?? 0) + time)
  }
}
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, t]) => `${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}`)
    .join('\n')
console.log(`self time\n${top(self, Number(process.argv[3] ?? 30))}`)
console.log(`\ninclusive time\n${top(inclusive, Number(process.argv[4] ?? 50))}`)
