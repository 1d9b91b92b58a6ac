/**
 * The names OpenCode gives skills and commands, written once for both surfaces. A skill's name is
 * its folder under `.opencode/skills/` and must equal the `name` in its SKILL.md frontmatter;
 * a command's name is its file stem under `.opencode/commands/` (invoked as `/<name>`).
 * @module
 */

/** Skill names: lowercase letters and digits in hyphen-separated words (e.g. `pdf-tools`). */
export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/
/** The longest skill name OpenCode loads. */
export const SKILL_NAME_MAX = 64
/** What a bad skill name is told. */
export const SKILL_NAME_RULE =
  'name must be 1-64 lowercase letters and digits in hyphen-separated words (e.g. pdf-tools)'

/** True when `name` is a valid skill name. */
export function isSkillName(name: unknown): name is string {
  return typeof name === 'string' && name.length >= 1 && name.length <= SKILL_NAME_MAX && SKILL_NAME.test(name)
}

/** Command names: letters, digits, `_` and `-`, 1-64 characters. */
export const COMMAND_NAME = /^[A-Za-z0-9_-]{1,64}$/
/** What a bad command name is told. */
export const COMMAND_NAME_RULE = 'Command name must be 1-64 letters, digits, _ or -'

/** True when `name` is a valid command name. */
export function isCommandName(name: unknown): name is string {
  return typeof name === 'string' && COMMAND_NAME.test(name)
}

/** The longest skill description OpenCode accepts. */
export const SKILL_DESCRIPTION_MAX = 1024

/** True when `value` is a usable skill description: 1-1024 characters, not only whitespace. */
export function isSkillDescription(value: unknown): value is string {
  return typeof value === 'string' && value.trim().length >= 1 && value.length <= SKILL_DESCRIPTION_MAX
}
