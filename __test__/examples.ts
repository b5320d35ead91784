// Reads the fenced code blocks of the README and the docs, for the tests that run them.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

export interface FencedBlock {
  /** The word after the opening fence (`js`, `ts`, `sh`, ...). */
  language: string
  /** A file name after the language, for a configuration file: ```js webpack.config.js */
  fileName?: string
  /** The line of the opening fence, counted from 1. */
  line: number
  code: string
}

/** README.md and every page of docs/, as paths relative to `root`. */
export function documentationPages(root: string): string[] {
  const docs = join(root, 'docs')
  const pages = existsSync(docs)
    ? readdirSync(docs)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : []
  return ['README.md', ...pages]
}

/** Languages a block may be fenced with. JavaScript is always `js`, so that no JavaScript block
 * escapes the examples test under another name. */
export const LANGUAGES = new Set(['js', 'ts', 'sh', 'text', 'json', 'html', 'rust'])

/** A fence as the test reads it: three backticks at the start of a line, a language of LANGUAGES,
 * and for a configuration file its name. */
const FENCE = /^```(?:([a-z]+)(?: ([\w.-]+\.[a-z]+))?)?$/
/** Anything a Markdown renderer may take for a fence: indented, tildes, more backticks. */
const ANY_FENCE = /^\s*(?:`{3,}|~{3,})/

/** The fenced blocks of a Markdown text. Throws on a fence the test would not read as written
 * (indented, ~~~, four backticks, a language not in LANGUAGES, more than a file name after it),
 * so that no example can hide from the test. */
export function fencedBlocks(markdown: string, page = 'markdown'): FencedBlock[] {
  const blocks: FencedBlock[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (!ANY_FENCE.test(lines[i])) continue
    const open = FENCE.exec(lines[i])
    const where = `${page}:${i + 1}`
    if (!open) throw new Error(`${where}: write fences as \`\`\`language at the start of a line: ${lines[i]}`)
    if (!open[1]) throw new Error(`${where}: a fence needs its language (${[...LANGUAGES].join(', ')})`)
    if (!LANGUAGES.has(open[1])) throw new Error(`${where}: unknown fence language ${open[1]} (JavaScript is js)`)
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) {
      if (ANY_FENCE.test(lines[i])) throw new Error(`${page}:${i + 1}: a fence inside the block opened at line ${start + 1}`)
      body.push(lines[i])
    }
    if (i === lines.length) throw new Error(`${where}: the block is never closed`)
    blocks.push({ language: open[1], fileName: open[2], line: start + 1, code: `${body.join('\n')}\n` })
  }
  return blocks
}

/** The configuration files the docs show (fenced with their name) that a test reads and runs. */
export const configurationFiles = [
  'esbuild.config.mjs',
  'esbuild-esm.config.mjs',
  'esbuild-external.config.mjs',
  'webpack.config.js',
] as const

/** The block of `page` fenced with `fileName`. */
export function configurationFile(root: string, page: string, fileName: (typeof configurationFiles)[number]): string {
  const block = fencedBlocks(readFileSync(join(root, page), 'utf8'), page).find((candidate) => candidate.fileName === fileName)
  if (!block) throw new Error(`${page} has no block fenced as ${fileName}`)
  return block.code
}
