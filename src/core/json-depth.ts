/**
 * How deep a JSON (or JSONC) text nests, measured on the text before any parser sees it.
 *
 * Why: the parsers and everything that walks a parsed value (valibot, jsonc-parser's edits and
 * formatter, `JSON.stringify`, the YAML writer) recurse once per level, so a small hostile text
 * (`[[[[…` 20,000 deep is 40 KB) overflows the stack deep inside a library and surfaces as a 500.
 * No config or request needs more than a few dozen levels; refusing deeper input up front keeps
 * every later step bounded. The scan is one linear pass with no recursion.
 * @module
 */

/** The deepest nesting accepted in a JSON request body or a JSON/JSONC config text. */
export const MAX_JSON_DEPTH = 64

/**
 * The offset of the bracket that first opens level `max + 1`, or -1 when the text nests at most
 * `max` deep. Brackets inside strings and (for JSONC) comments do not count; the text need not be
 * valid (a parser reports that afterwards).
 */
export function jsonDepthExceededAt(text: string, max: number = MAX_JSON_DEPTH): number {
  let depth = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return i
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--
    } else if (c === 0x22 /* " */) {
      // Skip the string, honouring escapes; an unterminated one ends the scan.
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i)
        if (s === 0x5c /* \ */) i++
        else if (s === 0x22) break
      }
    } else if (c === 0x2f /* / */ && i + 1 < n) {
      const next = text.charCodeAt(i + 1)
      if (next === 0x2f) {
        const end = text.indexOf('\n', i + 2)
        i = end < 0 ? n : end
      } else if (next === 0x2a /* * */) {
        const end = text.indexOf('*/', i + 2)
        i = end < 0 ? n : end + 1
      }
    }
  }
  return -1
}
