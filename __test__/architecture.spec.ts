// The layering of the JavaScript (docs/architecture.md), checked so that a change cannot quietly
// undo it: faces over one internal layer (lib/), one loader of the binding, one home for Node's
// modules, one table of parameters, no cycles, no file over 600 lines.
import { readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
const require = createRequire(import.meta.url)

/** The hand-written JavaScript: the faces at the root and lib/ (not napi-rs's loaders: index.js,
 * and those of the WebAssembly build). */
const generated = /^(index\.js|zstd-pool\..*|wasi-worker.*)$/
const faces = readdirSync(root).filter((name) => /\.m?js$/.test(name) && !generated.test(name))
const internal = readdirSync(join(root, 'lib'))
  .filter((name) => name.endsWith('.js'))
  .map((name) => `lib/${name}`)
const source = (file: string) => readFileSync(join(root, file), 'utf8')
/** A file's code, its comments left out. */
const code = (file: string) =>
  source(file)
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')

/** What a file requires or imports, as written. */
function imports(file: string): string[] {
  const text = source(file)
  const found = [...text.matchAll(/\brequire\(\s*'([^']+)'\s*\)|\bimport\s*(?:[^'"]*?\sfrom\s*)?\(?\s*'([^']+)'/g)]
  return found.map((match) => match[1] ?? match[2])
}

describe('the JavaScript layers', () => {
  it('the faces are the entries and the modules they re-export', () => {
    expect(faces.sort()).toEqual([
      'browser.mjs',
      'frame.js',
      'http.js',
      'http.mjs',
      'main.js',
      'main.mjs',
      'many.js',
      'request-decoding.js',
      'seekable.js',
      'stream.js',
      'zlib.js',
      'zlib.mjs',
    ])
  })

  it('the ES module entries are what scripts/esm-entries.mjs makes of main.js, zlib.js and http.js (their export lists are written once)', async () => {
    const { entries } = await import('../scripts/esm-entries.mjs')
    for (const { path, text } of entries) expect(source(path), `${path}: run node scripts/esm-entries.mjs`).toBe(text)
  })

  it('no internal module imports a face', () => {
    for (const file of internal) {
      for (const specifier of imports(file)) {
        const allowed = file === 'lib/platform.js' && specifier === '../index.js'
        if (!allowed) expect(specifier, `${file} imports ${specifier}`).toMatch(/^(\.\/[\w-]+\.js|#platform|node:[\w/]+)$/)
      }
    }
  })

  it('the binding is loaded in one place: lib/platform.js (index.js), lib/platform-browser.js takes it from browser.mjs', () => {
    const loaders = [...faces, ...internal].filter((file) => imports(file).some((specifier) => /index\.js$/.test(specifier)))
    expect(loaders).toEqual(['lib/platform.js'])
    const wasm = [...faces, ...internal].filter((file) => imports(file).includes('zstd-pool-wasm32-wasi'))
    expect(wasm).toEqual(['browser.mjs'])
  })

  it("only lib/platform.js names Node's modules among the internal ones; every other goes through #platform", () => {
    const users = internal.filter((file) => imports(file).some((specifier) => specifier.startsWith('node:')))
    expect(users).toEqual(['lib/platform.js'])
    for (const file of internal) expect(imports(file), file).not.toContain('./platform.js')
    for (const file of internal.filter((name) => name !== 'lib/platform.js')) expect(code(file), file).not.toMatch(/\bBuffer\.\w/)
  })

  it('the internal modules import each other without cycles', () => {
    const edges = new Map(
      internal.map((file) => [
        file,
        imports(file)
          .filter((specifier) => specifier.startsWith('./'))
          .map((specifier) => `lib/${specifier.slice(2)}`)
          .concat(imports(file).includes('#platform') ? ['lib/platform.js'] : []),
      ]),
    )
    const state = new Map<string, 'visiting' | 'done'>()
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return
      expect(state.get(file), `cycle: ${[...path, file].join(' -> ')}`).not.toBe('visiting')
      state.set(file, 'visiting')
      for (const next of edges.get(file) ?? []) visit(next, [...path, file])
      state.set(file, 'done')
    }
    for (const file of internal) visit(file, [])
  })

  it('no hand-written JavaScript file is over 600 lines', () => {
    for (const file of [...faces, ...internal]) expect(source(file).split('\n').length, file).toBeLessThanOrEqual(600)
  })
})

describe('the scheduling thresholds', () => {
  it('are written once, in crates/core/src/schedule.rs: lib/schedule.js and the lanes have no number of their own', () => {
    const code = (file: string) => source(file).replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')
    // Numbers other than 0 and 1 (counts, not thresholds) are what a threshold would look like.
    expect(code('lib/schedule.js').match(/(?<![\w.])(?:[2-9]|\d{2,})(?:\.\d+)?(?![\w.])|\d*\.\d+/g)).toBeNull()
    expect(code('crates/addon/src/napi/lanes.rs')).not.toMatch(/_MICROS\s*:\s*f64\s*=/)
    const { binding } = require('../lib/binding.js')
    expect(Object.keys(binding.capabilities().schedule).sort()).toEqual([
      'batchGroupBytes',
      'batchTeamGroupBytes',
      'maxBurstInlineMicros',
      'maxBurstInlineMicrosWithLanes',
      'maxInlineMicros',
      'maxInlineShareMs',
      'maxInlineShareMsInAPage',
      'shareBurstAfterMs',
    ])
  })
})

describe('the one table of compression parameters (lib/parameters.js)', () => {
  const parameters = require('../lib/parameters.js')
  const { binding } = require('../lib/binding.js')
  const names: string[] = parameters.PARAMETERS.map((row: { name: string }) => row.name)

  it('each parameter name is spelled in lib/parameters.js alone (typings aside)', () => {
    for (const file of [...faces, ...internal].filter((name) => name !== 'lib/parameters.js')) {
      const text = source(file)
      // As a word: windowLogMax (a decompress option) is not windowLog.
      for (const name of names) expect(new RegExp(`\\b${name}\\b`).test(text), `${file} spells ${name}`).toBe(false)
    }
  })

  it('has what the Rust list has: every parameter without an option of its own, by number', () => {
    const rust = binding
      .capabilities()
      .compressParameters.map(({ id }: { id: number }) => id)
      .sort((a: number, b: number) => a - b)
    const tuned = parameters.TUNED.map((row: { id: number }) => row.id)
    // The WebAssembly build has no multi-threading, and so no jobSize or overlapLog.
    expect(tuned.filter((id: number) => rust.includes(id))).toEqual(rust)
    expect(tuned.filter((id: number) => !rust.includes(id)).every((id: number) => id > 400)).toBe(true)
  })

  it('reads the named parameters in the order of the table, each once', () => {
    const read: PropertyKey[] = []
    const recorder = new Proxy(
      {},
      {
        get: (_, key) => {
          read.push(key)
          return undefined
        },
      },
    )
    expect(parameters.namedParameters(recorder)).toBeUndefined()
    expect(read).toEqual(parameters.TUNED.map((row: { name: string }) => row.name))
  })

  it("gives node:zlib's constants, in node:zlib's order where it has zstd", async () => {
    const zlib = require('../zlib.js')
    const ours = Object.keys(zlib.constants).filter((key) => /^ZSTD_(c_|fast|dfast|greedy|lazy|btlazy2|btopt|btultra)/.test(key))
    const nodeZlib: Record<string, number> = (await import('node:zlib')).constants as never
    if (!('ZSTD_c_windowLog' in nodeZlib)) return
    const theirs = Object.keys(nodeZlib).filter((key) => ours.includes(key))
    expect(ours).toEqual(theirs)
    for (const key of ours) expect(zlib.constants[key], key).toBe(nodeZlib[key])
  })
})
