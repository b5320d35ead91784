// What `npm publish` would ship: the entries of the exports map and their typings, the binding
// loader, the manual the README links to, the changelog and the license; and links that lead
// somewhere, in the package for the README (the page npm shows) and in the repository for the docs.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

import { documentationPages } from './examples'

const root = fileURLToPath(new URL('..', import.meta.url))
const [{ files }] = JSON.parse(
  execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
)
const shipped = new Set<string>(files.map(({ path }: { path: string }) => path))

/** The links of a Markdown page that lead into the repository: [text](target#anchor). */
function localLinks(page: string) {
  const markdown = readFileSync(join(root, page), 'utf8')
  return [...markdown.matchAll(/\]\(((?!https?:|mailto:)[^)#\s]*)(?:#([^)\s]*))?\)/g)].map(([, target, anchor]) => ({
    file: target ? normalize(join(dirname(page), target)) : page,
    anchor,
  }))
}

/** The anchors GitHub gives the headings of a Markdown page. */
function anchors(page: string): Set<string> {
  const headings =
    readFileSync(join(root, page), 'utf8')
      .replace(/^```[\s\S]*?^```$/gm, '')
      .match(/^#{1,6} .*$/gm) ?? []
  return new Set(
    headings.map((heading) =>
      heading
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    ),
  )
}

describe('the packed package', () => {
  it('ships every entry, the docs the README links to, CHANGELOG.md and LICENSE', () => {
    const { exports: entries, main, types } = JSON.parse(readFileSync(`${root}/package.json`, 'utf8'))
    // The values of the exports map (its keys, like './zlib', are not files).
    const targets = JSON.stringify(entries)
      .match(/"\.\/[\w./-]+\.(?:m?js|d\.m?ts|json)"/g)!
      .map((target: string) => target.slice(3, -1))
    for (const file of [main, types, ...targets, ...documentationPages(root), 'CHANGELOG.md', 'LICENSE'])
      expect(shipped, file).toContain(file)
    expect(readFileSync(`${root}/LICENSE`, 'utf8')).toMatch(/^MIT License/)
  })

  it('links from the README only to what the package ships, and from the docs to what the repository has', () => {
    for (const page of documentationPages(root))
      for (const { file, anchor } of localLinks(page)) {
        const where = `${page} links to ${file}${anchor ? `#${anchor}` : ''}`
        if (page === 'README.md')
          expect(shipped.has(file) || [...shipped].some((path) => path.startsWith(`${file}/`)), where).toBe(true)
        expect(existsSync(join(root, file)), where).toBe(true)
        if (anchor) expect(anchors(file).has(anchor), where).toBe(true)
      }
  })
})
