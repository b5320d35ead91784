// What `npm publish` would ship: the entries of the exports map and their typings, the binding
// loader, the manual the README links to, the changelog and the license.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

import { documentationPages } from './examples'

const root = fileURLToPath(new URL('..', import.meta.url))

describe('the packed package', () => {
  it('ships every entry, the docs the README links to, CHANGELOG.md and LICENSE', () => {
    const [{ files }] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
    )
    const shipped = new Set(files.map(({ path }: { path: string }) => path))
    const { exports: entries, main, types } = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'))
    // The values of the exports map (its keys, like './zlib', are not files).
    const targets = JSON.stringify(entries)
      .match(/"\.\/[\w./-]+\.(?:m?js|d\.m?ts|json)"/g)!
      .map((target: string) => target.slice(3, -1))
    for (const file of [main, types, ...targets, ...documentationPages(root), 'CHANGELOG.md', 'LICENSE'])
      expect(shipped, file).toContain(file)
    expect(readFileSync(`${root}/LICENSE`, 'utf8')).toMatch(/^MIT License/)
  })

  it('links from the README and the docs only to files that exist', () => {
    for (const page of documentationPages(root)) {
      const markdown = readFileSync(join(root, page), 'utf8')
      for (const [, target] of markdown.matchAll(/\]\(((?!https?:)[^)#\s]+)(?:#[^)]*)?\)/g))
        expect(existsSync(join(root, dirname(page), target)), `${page} links to ${target}`).toBe(true)
    }
  })
})
