/**
 * Types for the console's static files, which are imported `with { type: 'text' }` so that Bun
 * embeds them in the compiled binary and Deno and `bun` from source read them the same way.
 */
declare module '*.mjs' {
  const text: string
  export default text
}
declare module '*.html' {
  const text: string
  export default text
}
declare module '*.css' {
  const text: string
  export default text
}
