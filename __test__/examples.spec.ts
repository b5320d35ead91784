// Every example in README.md and docs/*.md runs as pasted. A block fenced ```js is a complete
// program: it is written to a file in a fresh folder whose node_modules/zstd-pool is this package
// (as `npm install zstd-pool` would give it), run with the Node running the tests, and must exit 0.
// A block that uses `import` runs as an ES module, any other as CommonJS. A block fenced with a file
// name after the language (```js webpack.config.js) is a configuration file, not a program: the test
// that uses it reads it from the docs (bundle.spec.ts reads docs/bundling.md's), and this file checks
// that each such block is claimed by one.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { configurationFiles, documentationPages, fencedBlocks } from './examples'
import { wasi } from './helpers'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The configuration blocks other tests read, by the file name they are fenced with. */
const claimed = new Set(configurationFiles)

const examples = documentationPages(root).flatMap((page) =>
  fencedBlocks(readFileSync(join(root, page), 'utf8')).map((block) => ({ page, ...block })),
)
const programs = examples.filter(({ language, fileName }) => language === 'js' && !fileName)

describe('the examples of the README and the docs', () => {
  it('are many, and every ```js block is a program or a configuration file a test reads', () => {
    expect(programs.length).toBeGreaterThanOrEqual(12)
    for (const { page, line, language, fileName } of examples) {
      if (language !== 'js' || !fileName) continue
      expect(claimed.has(fileName), `${page}:${line}: no test reads the configuration file ${fileName}`).toBe(true)
    }
    for (const { page, line, language } of examples)
      expect(['mjs', 'cjs', 'javascript'], `${page}:${line}: fence JavaScript as js`).not.toContain(language)
  })

  // Under the WebAssembly build the package is the same, but some examples use worker threads,
  // which that build does not have; the native build is what users install on Linux.
  describe.skipIf(wasi)('run as pasted', () => {
    const work = realpathSync(mkdtempSync(join(tmpdir(), 'zstd-pool-examples-')))
    afterAll(() => rmSync(work, { recursive: true, force: true }))

    it.each(programs.map((example) => [`${example.page}:${example.line}`, example] as const))('%s', (_, example) => {
      const dir = join(work, `${example.page.replace(/\W/g, '-')}-${example.line}`)
      mkdirSync(join(dir, 'node_modules'), { recursive: true })
      symlinkSync(root, join(dir, 'node_modules', 'zstd-pool'), 'dir')
      const file = join(dir, /^\s*(import|export)\s/m.test(example.code) ? 'example.mjs' : 'example.cjs')
      writeFileSync(file, example.code)
      const child = spawnSync(process.execPath, [file], {
        cwd: dir,
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, NODE_OPTIONS: '' },
      })
      const how = child.error ? String(child.error) : `exit code ${child.status}, signal ${child.signal}`
      expect(child.status, `${example.page}:${example.line}: ${how}\n${child.stdout}\n${child.stderr}`).toBe(0)
    })
  })
})
