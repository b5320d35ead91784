// `npm run test:platforms`: installs the package as a user would, from `npm pack` tarballs (the
// root package and this platform's binary package) into a fresh project with no network, then
// requires it (and zstd-pool/zlib), imports them as ESM and type-checks a TypeScript file against
// them, on every Node given as well as the one running this. Prints "N passed, N failed".
// node scripts/smoke.mjs [path/to/node-or-bun ...]
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
// The Node running this, then every runtime given (other Nodes, Bun).
const nodes = [process.execPath, ...process.argv.slice(2).map((node) => resolve(node))]
const work = mkdtempSync(join(tmpdir(), 'zstd-pool-smoke-'))
const run = (command, args, options = {}) => execFileSync(command, args, { encoding: 'utf8', ...options })

// The binary package of this platform, with the addon built here.
const addon = readdirSync(root).find((name) => name.endsWith('.node'))
const platform = addon.replace(/^zstd-pool\./, '').replace(/\.node$/, '')
copyFileSync(join(root, addon), join(root, 'npm', platform, addon))
const pack = (dir) =>
  join(
    work,
    run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], { cwd: dir }).trim().split('\n').at(-1),
  )
const tarballs = [pack(root), pack(join(root, 'npm', platform))]

const project = join(work, 'project')
run('mkdir', ['-p', project])
writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'smoke', private: true, version: '1.0.0' }))
run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', ...tarballs], { cwd: project })

writeFileSync(
  join(project, 'check.cjs'),
  `const zstd = require('zstd-pool')
const data = Buffer.from('smoke test '.repeat(1000))
const frame = zstd.compressSync(data)
if (!zstd.decompressSync(frame).equals(data)) throw new Error('sync round trip')
const zlib = require('zstd-pool/zlib')
if (!zlib.zstdDecompressSync(zlib.zstdCompressSync(data)).equals(data)) throw new Error('zstd-pool/zlib round trip')
zstd.decompress(frame).then((back) => { if (!back.equals(data)) throw new Error('async round trip'); console.log('cjs ok') })`,
)
writeFileSync(
  join(project, 'check.mjs'),
  `import zstd, { compress, decompress, createCompressStream, Dictionary, compressMany, decompressMany } from 'zstd-pool'
const data = Buffer.from('smoke test '.repeat(1000))
const back = await decompress(await compress(data, 3))
if (!back.equals(data) || typeof createCompressStream !== 'function' || typeof Dictionary !== 'function') throw new Error('esm')
const [one, two] = await decompressMany(await compressMany([data, 'two']))
if (!one.equals(data) || two.toString() !== 'two') throw new Error('batch round trip')
if (zstd.compress !== compress) throw new Error('default export')
const { zstdCompress, zstdDecompressSync, constants } = await import('zstd-pool/zlib')
const viaZlib = await new Promise((resolve, reject) => zstdCompress(data, { params: { [constants.ZSTD_c_checksumFlag]: 1 } }, (error, result) => (error ? reject(error) : resolve(result))))
if (!zstdDecompressSync(viaZlib).equals(data)) throw new Error('zstd-pool/zlib round trip')
console.log('esm ok')`,
)
writeFileSync(
  join(project, 'check.ts'),
  `import { compress, compressSync, decompressSync, Dictionary, createDecompressStream, compressMany, decompressManySync, type BatchError, type CompressOptions } from 'zstd-pool'
import { constants, createZstdCompress, zstdCompressSync, type ZstdCompress, type ZstdOptions } from 'zstd-pool/zlib'
const options: CompressOptions = { level: 3, checksum: true }
const frame: Buffer = compressSync('typed', options)
const text: string = decompressSync(frame).toString()
const later: Promise<Buffer> = compress(new Uint8Array([1, 2, 3]), 19)
const stream = createDecompressStream({ maxOutputLength: 1024 })
const id: number = new Dictionary(Buffer.from('raw dictionary')).id
const many: Promise<Buffer[]> = compressMany(['a', new Uint8Array(2)], { level: 5 })
let failedAt = -1
try {
  decompressManySync([frame, Buffer.from('x')])
} catch (error) {
  failedAt = (error as BatchError).index
}
const zlibOptions: ZstdOptions = { params: { [constants.ZSTD_c_compressionLevel]: 9 }, maxOutputLength: 1 << 20 }
const viaZlib: Buffer = zstdCompressSync('typed', zlibOptions)
const { buffer, engine }: { buffer: Buffer; engine: ZstdCompress } = zstdCompressSync('typed', { info: true })
createZstdCompress({ flush: constants.ZSTD_e_flush }).flush(() => {})
void [text, later, stream, id, many, failedAt, viaZlib, buffer, engine]`,
)

let passed = 0
let failed = 0
const check = (name, fn) => {
  try {
    fn()
    passed++
    console.log(`ok   ${name}`)
  } catch (error) {
    failed++
    console.log(`FAIL ${name}\n${error.stdout ?? ''}${error.stderr ?? error.message}`)
  }
}
for (const node of nodes) {
  const runtime = `${node.endsWith('bun') ? 'Bun' : 'Node'} ${run(node, ['--version']).trim()}`
  check(`require on ${runtime}`, () => run(node, ['check.cjs'], { cwd: project }))
  check(`import on ${runtime}`, () => run(node, ['check.mjs'], { cwd: project }))
}
check('TypeScript type check (tsc --strict)', () =>
  run(
    join(root, 'node_modules/.bin/tsc'),
    [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--typeRoots',
      join(root, 'node_modules/@types'),
      '--types',
      'node',
      'check.ts',
    ],
    { cwd: project },
  ),
)
console.log(`${passed} passed, ${failed} failed`)
process.exitCode = failed ? 1 : 0
