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

/** The fenced blocks of a Markdown text (``` fences at the start of a line). */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = []
  const lines = markdown.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(?:\s+(\S+))?\s*$/.exec(lines[i])
    if (!open?.[1]) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i])
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
  const block = fencedBlocks(readFileSync(join(root, page), 'utf8')).find((candidate) => candidate.fileName === fileName)
  if (!block) throw new Error(`${page} has no block fenced as ${fileName}`)
  return block.code
}
