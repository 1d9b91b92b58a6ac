import { assert, suite } from '../../../tests/harness.ts'
import { checkSelector, compileSelector } from './source-items.ts'

const test = suite('control-plane/source-items')

/** The backtracking RegExp selectors used to compile to: the reference for the semantics. */
function formerRegExp(selector: string): RegExp {
  let out = ''
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i]!
    if (c === '*' && selector[i + 1] === '*') {
      const slash = selector[i + 2] === '/'
      out += slash ? '(?:.*/)?' : '.*'
      i += slash ? 2 : 1
    } else if (c === '*') out += '[^/]*'
    else if (c === '?') out += '[^/]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`)
}

const TABLE: Array<[selector: string, path: string, matches: boolean]> = [
  ['skills/*/SKILL.md', 'skills/pdf/SKILL.md', true],
  ['skills/*/SKILL.md', 'skills/SKILL.md', false],
  ['skills/*/SKILL.md', 'skills/a/b/SKILL.md', false],
  ['skills/*/SKILL.md', 'skills//SKILL.md', true],
  ['skills/*/SKILL.md', 'x/skills/pdf/SKILL.md', false],
  ['skills/*/SKILL.md', 'skills/pdf/SKILL.mdx', false],
  ['**/SKILL.md', 'SKILL.md', true],
  ['**/SKILL.md', 'a/SKILL.md', true],
  ['**/SKILL.md', 'a/b/c/SKILL.md', true],
  ['**/SKILL.md', 'aSKILL.md', false],
  ['**/SKILL.md', '/SKILL.md', true],
  ['a/**/b', 'a/b', true],
  ['a/**/b', 'a/x/y/b', true],
  ['a/**/b', 'a/xb', false],
  ['a**/b', 'axyz/q/b', true],
  ['a/**', 'a/', true],
  ['a/**', 'a/x/y', true],
  ['a/**', 'a', false],
  ['**', '', true],
  ['**', 'any/thing/at/all', true],
  ['**.md', 'docs/x.md', true],
  ['*', 'file', true],
  ['*', 'dir/file', false],
  ['*', '', true],
  ['*.md', 'README.md', true],
  ['*.md', 'READMEmd', false],
  ['.opencode/commands/*.md', '.opencode/commands/deploy.md', true],
  ['.opencode/commands/*.md', 'x.opencode/commands/deploy.md', false],
  ['?', 'a', true],
  ['?', '/', false],
  ['?', '', false],
  ['a?c', 'abc', true],
  ['a?c', 'a/c', false],
  ['a?c', 'abbc', false],
  ['a+b (1)@x', 'a+b (1)@x', true],
  ['a+b', 'aab', false],
  ['a.b', 'axb', false],
  ['***', 'a/b', true],
  ['*a*', 'bab', true],
  ['*a*', 'b/a', false],
  ['', '', true],
  ['', 'a', false],
  // Line breaks: `*` and `?` take them, `**` never did (it was `.*`).
  ['*', 'a\nb', true],
  ['?', '\n', true],
  ['**', 'a\nb', false],
  ['**/x', 'a\n/x', false],
  ['a/**/b', 'a/\n/b', false],
]

test('selectors keep their meaning: * within a segment, ** across segments, **/ optional leading directories, ? one character', () => {
  for (const [selector, path, expected] of TABLE) {
    assert.is(compileSelector(selector).test(path), expected, `${JSON.stringify(selector)} on ${JSON.stringify(path)}`)
    assert.is(
      formerRegExp(selector).test(path),
      expected,
      `reference: ${JSON.stringify(selector)} on ${JSON.stringify(path)}`,
    )
  }
})

test('selectors match exactly what the former RegExp matched, on random short selectors and paths', () => {
  let seed = 12345
  const random = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
    return (seed >>> 8) % n
  }
  const selectorParts = ['a', 'b', '/', '.', '*', '**', '**/', '?', '*/']
  const pathParts = ['a', 'b', '/', '.', '\n', 'ab/']
  for (let round = 0; round < 4000; round++) {
    let selector = ''
    for (let k = random(7); k > 0; k--) selector += selectorParts[random(selectorParts.length)]
    const matcher = compileSelector(selector)
    const reference = formerRegExp(selector)
    for (let j = 0; j < 5; j++) {
      let path = ''
      for (let k = random(8); k > 0; k--) path += pathParts[random(pathParts.length)]
      assert.is(matcher.test(path), reference.test(path), `${JSON.stringify(selector)} on ${JSON.stringify(path)}`)
    }
  }
})

test('pathological selectors (runs of ** and *a) match long paths in linear time instead of stalling the process', () => {
  // Ordered so the old backtracking RegExp fails on the first, mildest case (seconds there)
  // instead of hanging on the later ones (hours there).
  const skill = 'skills/' + 'a'.repeat(40) + '/SKILL.md'
  const cases: Array<[selector: string, path: string, matches: boolean]> = [
    ['**'.repeat(8) + 'Z', skill, false],
    ['*a'.repeat(11), 'a'.repeat(40) + 'b', false],
    ['**'.repeat(12) + 'Z', skill, false],
    ['**'.repeat(12) + 'Z', skill + 'Z', true],
    ['*a'.repeat(30), 'a'.repeat(200) + 'b', false],
    ['*a'.repeat(30), 'a'.repeat(200), true],
    ['**/a'.repeat(30) + 'Z', 'a/'.repeat(100) + 'a', false],
    ['?*'.repeat(100), 'x'.repeat(4000) + '/', false],
  ]
  for (const [selector, path, expected] of cases) {
    assert.is(checkSelector(selector), null, 'the selector is accepted')
    // CPU time, not wall time: a busy machine stretches the wall clock, never the work done.
    const started = process.cpuUsage()
    const result = compileSelector(selector).test(path)
    const used = process.cpuUsage(started)
    const elapsed = (used.user + used.system) / 1000
    assert.is(result, expected, `${selector.slice(0, 20)}… on a ${path.length}-char path`)
    assert.ok(elapsed < 500, `${selector.slice(0, 20)}… on a ${path.length}-char path took ${elapsed.toFixed(0)} ms`)
  }
})

test('selector validation is unchanged', () => {
  for (const ok of ['skills/*/SKILL.md', '**/SKILL.md', 'a?c', 'dir with space/@scope+x/*.md', '**'.repeat(12) + 'Z'])
    assert.is(checkSelector(ok), null, ok)
  assert.is(checkSelector('/abs/*.md'), 'must be a relative path pattern without ..')
  assert.is(checkSelector('a/../b'), 'must be a relative path pattern without ..')
  assert.is(checkSelector('a[bc]'), 'may contain letters, digits, . _ - @ + space, / and the wildcards * ** ?')
  assert.is(checkSelector('a\nb'), 'may contain letters, digits, . _ - @ + space, / and the wildcards * ** ?')
})

test.run()
