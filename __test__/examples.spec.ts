// Every example in README.md and docs/*.md runs as pasted. A block fenced ```js is a complete
// program: it is written to a file in a project where the package is installed as users get it
// (from `npm pack` tarballs), run with the Node running the tests, and must exit 0, print what it
// shows, write nothing on stderr and leave no file behind. A block that uses `import` is an ES
// module (saved as .mjs), any other CommonJS (.cjs), as the README tells readers. A block fenced
// with a file name after the language (```js webpack.config.js) is a configuration file, not a
// program: the test that uses it reads it from the page (bundle.spec.ts reads docs/bundling.md's),
// and this file checks that each such block is claimed by one.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

import { configurationFiles, documentationPages, fencedBlocks } from './examples'
import { addon, installPacked, wasi } from './helpers'

const root = fileURLToPath(new URL('..', import.meta.url))
const claimed = new Set<string>(configurationFiles)

const examples = documentationPages(root).flatMap((page) =>
  fencedBlocks(readFileSync(join(root, page), 'utf8'), page).map((block) => ({ page, ...block })),
)
const programs = examples.filter(({ language, fileName }) => language === 'js' && !fileName)

describe('the examples of the README and the docs', () => {
  it('are many, and every ```js block is a program or a configuration file a test reads', () => {
    expect(programs.length).toBeGreaterThanOrEqual(12)
    for (const { page, line, language, fileName } of examples)
      if (language === 'js' && fileName)
        expect(claimed.has(fileName), `${page}:${line}: no test reads the configuration file ${fileName}`).toBe(true)
  })

  it('are read strictly: a fence the test would not read as written fails it', () => {
    for (const markdown of ['```JS\n```\n', '~~~js\n~~~\n', '- item\n  ```js\n  ```\n', '````js\n````\n', '```js a b\n```\n'])
      expect(() => fencedBlocks(markdown), markdown).toThrow()
    expect(fencedBlocks('```js\nconsole.log(1)\n```\n')).toEqual([{ language: 'js', line: 1, code: 'console.log(1)\n' }])
  })

  // The native build is what users install on Linux; under the WebAssembly build (no worker
  // threads in libzstd) the examples would test that build's limits instead.
  describe.skipIf(wasi || !addon)('run as pasted', () => {
    let work: string
    let project: string
    beforeAll(() => {
      work = realpathSync(mkdtempSync(join(tmpdir(), 'zstd-pool-examples-')))
      project = installPacked(work, 'examples')
    }, 60_000)
    afterAll(() => rmSync(work, { recursive: true, force: true }))

    it.each(programs.map((example) => [`${example.page}:${example.line}`, example] as const))('%s', (_, example) => {
      const dir = join(project, `${example.page.replace(/\W/g, '-')}-${example.line}`)
      const temporary = join(dir, 'tmp')
      mkdirSync(temporary, { recursive: true })
      const name = /^\s*(import|export)\s/m.test(example.code) ? 'example.mjs' : 'example.cjs'
      writeFileSync(join(dir, name), example.code)
      const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temporary }
      for (const variable of ['NODE_OPTIONS', 'NAPI_RS_FORCE_WASI', 'NAPI_RS_NATIVE_LIBRARY_PATH']) delete env[variable]
      const child = spawnSync(process.execPath, [name], { cwd: dir, encoding: 'utf8', timeout: 60_000, env })
      const where = `${example.page}:${example.line}`
      const how = child.error ? String(child.error) : `exit code ${child.status}, signal ${child.signal}`
      expect(child.status, `${where}: ${how}\n${child.stdout}\n${child.stderr}`).toBe(0)
      expect(child.stderr, `${where} wrote on stderr`).toBe('')
      expect(child.stdout.trim(), `${where} printed nothing`).not.toBe('')
      expect(readdirSync(dir).sort(), `${where} left files behind`).toEqual([name, 'tmp'].sort())
      expect(readdirSync(temporary), `${where} left files in the temporary folder`).toEqual([])
    })
  })
})
