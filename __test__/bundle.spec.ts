// A user's program bundled for Node with the configuration files of docs/bundling.md, read from
// that page as written, then run with the project's node_modules moved away: the bundle must load
// the native binary from where the bundler emitted it. The package is installed as a user gets it:
// from `npm pack` tarballs (the root package and this platform's binary package), offline, as in
// scripts/smoke.mjs.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as esbuild from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import webpack from 'webpack'

import { configurationFile } from './examples'
import { addon, installPacked, skipWithoutZstdCli, wasi, zstdPiped } from './helpers'

const root = fileURLToPath(new URL('..', import.meta.url))
const { exports: entryPoints } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** The configuration files docs/bundling.md gives, by the name they are fenced with. */
const configurations = [
  'esbuild.config.mjs',
  'esbuild-esm.config.mjs',
  'esbuild-external.config.mjs',
  'webpack.config.js',
] as const

const text = 'zstd-pool, bundled. '.repeat(5000)

// The program, once with require() and once with named imports. It prints its frames (for the
// zstd tool) and the native binaries the process mapped.
const roundTrips = `
const collect = async (source) => {
  const chunks = []
  for await (const chunk of source) chunks.push(chunk)
  return Buffer.concat(chunks)
}
async function main() {
  const data = Buffer.from(${JSON.stringify(text)})
  const frame = zstd.compressSync(data, 3)
  if (!zstd.decompressSync(frame).equals(data)) throw new Error('sync round trip')
  const promised = await zstd.compress(data, { level: 5, checksum: true })
  if (!(await zstd.decompress(promised)).equals(data)) throw new Error('Promise round trip')
  let streamed
  await pipeline(Readable.from([data.subarray(0, 4000), data.subarray(4000)]), zstd.createCompressStream(), async (frames) => {
    streamed = await collect(frames)
  })
  let unstreamed
  await pipeline(Readable.from([streamed]), zstd.createDecompressStream(), async (chunks) => {
    unstreamed = await collect(chunks)
  })
  if (!unstreamed.equals(data)) throw new Error('stream round trip')
  const addons =
    process.platform === 'linux'
      ? [...new Set(readFileSync('/proc/self/maps', 'utf8').split('\\n').map((line) => line.slice(line.indexOf('/'))))].filter(
          (path) => path.endsWith('.node'),
        )
      : null
  console.log(JSON.stringify({ frames: [frame, promised, streamed].map((bytes) => bytes.toString('base64')), addons }))
}
main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
`
const programs: Record<string, string> = {
  'uses-require.cjs': `const zstd = require('zstd-pool')
const { readFileSync } = require('node:fs')
const { Readable } = require('node:stream')
const { pipeline } = require('node:stream/promises')
${roundTrips}`,
  'uses-import.mjs': `import { compress, compressSync, createCompressStream, createDecompressStream, decompress, decompressSync } from 'zstd-pool'
import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
const zstd = { compress, compressSync, createCompressStream, createDecompressStream, decompress, decompressSync }
${roundTrips}`,
}
// Every entry of the exports map (zstd-pool, and subpaths such as zstd-pool/zlib), required and
// imported: the names it gives must be those it gives unbundled.
const subpaths = Object.keys(entryPoints)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => `zstd-pool${subpath.slice(1)}`)
subpaths.forEach((specifier, i) => {
  programs[`names-${i}.cjs`] = `console.log(JSON.stringify(Object.keys(require('${specifier}')).sort()))`
  programs[`names-${i}.mjs`] = `import * as entry from '${specifier}'
console.log(JSON.stringify(Object.keys(entry).sort()))`
})
/** The output name of each program: a.cjs and a.mjs must not both become a.js. */
const bundleName = (file: string) => file.replace(/\.(c|m)js$/, '-$1')

let work: string
let project: string
/** What each configuration file exports, loaded from the project as a user's build would load it. */
const loaded = new Map<(typeof configurations)[number], esbuild.BuildOptions | webpack.Configuration>()
const esbuildOptions = (file: 'esbuild.config.mjs' | 'esbuild-esm.config.mjs' | 'esbuild-external.config.mjs') =>
  loaded.get(file) as esbuild.BuildOptions
const unbundled = new Map<string, string[]>()

/** Runs `file` with Node from outside the project, with no override of where the binary is. */
function run(file: string) {
  const env = { ...process.env }
  for (const name of ['NODE_PATH', 'NAPI_RS_NATIVE_LIBRARY_PATH', 'NAPI_RS_FORCE_WASI']) delete env[name]
  return execFileSync(process.execPath, [file], { cwd: work, env, encoding: 'utf8' })
}

function withoutNodeModules<T>(fn: () => T): T {
  renameSync(join(project, 'node_modules'), join(project, 'node_modules.away'))
  try {
    return fn()
  } finally {
    renameSync(join(project, 'node_modules.away'), join(project, 'node_modules'))
  }
}

/** The native binaries the bundler emitted into `dir`. */
const emitted = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.node'))
    .map((name) => join(dir, name))

/** Runs every program bundled into `dir` and checks what it printed: the round trips must load
 * the native binary at `binary`, and no other. */
function checkBundles(dir: string, extension: string, binary: string) {
  for (const program of Object.keys(programs)) {
    const output = run(join(dir, bundleName(program) + extension))
    if (program.startsWith('names-')) {
      const names: string[] = JSON.parse(output)
      const expected = unbundled.get(program)!
      // Imported, a CommonJS module may give a bundler more names than Node's static detection finds.
      if (program.endsWith('.cjs')) expect(names, program).toEqual(expected)
      else expect(names, program).toEqual(expect.arrayContaining(expected))
      continue
    }
    const { frames, addons } = JSON.parse(output)
    if (addons) expect(addons, program).toEqual([realpathSync(binary)])
    if (!skipWithoutZstdCli)
      for (const frame of frames) expect(zstdPiped(['-d'], Buffer.from(frame, 'base64')).toString()).toBe(text)
  }
}

describe.skipIf(wasi || !addon)('a program bundled for Node', () => {
  beforeAll(async () => {
    work = realpathSync(mkdtempSync(join(tmpdir(), 'zstd-pool-bundle-')))
    project = installPacked(work, 'bundled')
    // The configuration files, as the user keeps them in the project: ES modules whose default
    // export is esbuild's options, and webpack.config.js (CommonJS, as the project has no "type").
    for (const file of configurations) writeFileSync(join(project, file), configurationFile(root, 'docs/bundling.md', file))
    const requireFromProject = createRequire(join(project, 'package.json'))
    for (const file of configurations)
      loaded.set(
        file,
        file.endsWith('.mjs') ? (await import(pathToFileURL(join(project, file)).href)).default : requireFromProject(`./${file}`),
      )
    for (const [file, source] of Object.entries(programs)) {
      writeFileSync(join(project, file), source)
      if (file.startsWith('names-')) {
        const names: string[] = JSON.parse(execFileSync(process.execPath, [file], { cwd: project, encoding: 'utf8' }))
        // Node 23 and later add 'module.exports' to the namespace of a CommonJS module.
        unbundled.set(
          file,
          names.filter((name) => name !== 'module.exports'),
        )
      }
    }
  }, 60_000)

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true })
  })

  const esbuildBundles = async (outdir: string, options: esbuild.BuildOptions) => {
    const result = await esbuild.build({
      ...options,
      absWorkingDir: project,
      entryPoints: Object.fromEntries(Object.keys(programs).map((file) => [bundleName(file), `./${file}`])),
      outdir,
    })
    expect(result.errors).toEqual([])
    expect(result.warnings).toEqual([])
    return outdir
  }

  // Bundles that carry the binary are written outside the project, and run with its node_modules
  // moved away as well.
  it('by esbuild with the copy loader for .node files runs without node_modules, with the binary esbuild copied', async () => {
    const outdir = await esbuildBundles(join(work, 'esbuild'), esbuildOptions('esbuild.config.mjs'))
    const binaries = emitted(outdir)
    expect(binaries).toEqual([expect.stringMatching(new RegExp(`/${addon!.replace(/\.node$/, '')}-\\w+\\.node$`))])
    withoutNodeModules(() => checkBundles(outdir, '.js', binaries[0]))
  })

  it('by esbuild as an ES module (with a require() for the CommonJS inside) runs without node_modules', async () => {
    const outdir = await esbuildBundles(join(work, 'esbuild-esm'), esbuildOptions('esbuild-esm.config.mjs'))
    const binaries = emitted(outdir)
    expect(binaries).toHaveLength(1)
    withoutNodeModules(() => checkBundles(outdir, '.mjs', binaries[0]))
  })

  it('by esbuild with packages external runs from the project, with the binary in node_modules', async () => {
    const outdir = await esbuildBundles(join(project, 'dist'), esbuildOptions('esbuild-external.config.mjs'))
    expect(emitted(outdir)).toEqual([])
    const platformPackage = `zstd-pool-${addon!.replace(/^zstd-pool\./, '').replace(/\.node$/, '')}`
    checkBundles(outdir, '.js', join(project, 'node_modules', platformPackage, addon!))
  })

  it('by webpack (target node, node-loader) builds without errors or warnings and runs without node_modules', async () => {
    const outputPath = join(work, 'webpack')
    const stats = await new Promise<webpack.Stats>((resolve, reject) => {
      const compiler = webpack({
        ...(loaded.get('webpack.config.js') as webpack.Configuration),
        context: project,
        entry: Object.fromEntries(Object.keys(programs).map((file) => [bundleName(file), `./${file}`])),
        output: { path: outputPath, filename: '[name].js' },
        // node-loader is a devDependency of this repository, not of the project.
        resolveLoader: { modules: [join(root, 'node_modules')] },
      })
      compiler.run((error, result) => compiler.close(() => (error ? reject(error) : resolve(result!))))
    })
    const { errors, warnings } = stats.toJson({ all: false, errors: true, warnings: true })
    expect(errors).toEqual([])
    expect(warnings).toEqual([])
    const binaries = emitted(outputPath)
    expect(binaries).toEqual([expect.stringMatching(/\/[0-9a-f]+\.node$/)])
    withoutNodeModules(() => checkBundles(outputPath, '.js', binaries[0]))
  })
})
