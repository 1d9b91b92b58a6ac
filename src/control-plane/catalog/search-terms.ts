/**
 * Words for the config-object text search. `q` is answered from an index of words (title,
 * description and latest content, lowercased, accents folded) instead of scanning rows with
 * LIKE, so its cost follows the number of matches, not the size of the organization. A query
 * matches an object when every query word is a prefix of one of the object's words
 * (`pdf` matches "PDF-tools"; `too` matches "tools").
 * @module
 */

/** Most words kept per object; later words of very long content are not searchable. */
export const MAX_TERMS = 400
const MIN_LENGTH = 2
const MAX_LENGTH = 40

/** The distinct search words of a text, in first-seen order. */
export function searchTerms(text: string, max = MAX_TERMS): string[] {
  const out = new Set<string>()
  for (const word of text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)) {
    if (word.length < MIN_LENGTH) continue
    out.add(word.slice(0, MAX_LENGTH))
    if (out.size >= max) break
  }
  return [...out]
}

/** The words of a query (each matched as a prefix), or an empty list when it has none usable. */
export function queryTerms(q: string): string[] {
  const terms = q
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.slice(0, MAX_LENGTH))
  return [...new Set(terms)].slice(0, 8)
}

/** The exclusive upper bound of the range of words starting with `prefix`. */
export function prefixUpperBound(prefix: string): string {
  return `${prefix}~`
}
