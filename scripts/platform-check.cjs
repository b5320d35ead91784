// A quick check of the whole API on one platform's binary, for runtimes where the test suite
// cannot run (an emulated CPU): NAPI_RS_NATIVE_LIBRARY_PATH=<binary> node scripts/platform-check.cjs
const { Readable, Writable } = require('node:stream')
const { pipeline } = require('node:stream/promises')

const zstd = require('../main.js')

async function main() {
  // A .node that fails to load is not an error to the generated loader: it falls back to the
  // WebAssembly build when one sits next to index.js (CI builds it), which would then pass here.
  const binding = require('../index.js').__napiBindingTarget ?? 'native'
  const override = process.env.NAPI_RS_NATIVE_LIBRARY_PATH ?? ''
  if (override.endsWith('.node') && binding !== 'native') throw new Error(`${override} did not load (${binding} did)`)
  const data = Buffer.from(`${process.arch} ${process.version} `.repeat(20000))
  const frame = zstd.compressSync(data, 3)
  if (!zstd.decompressSync(frame).equals(data)) throw new Error('sync round trip')
  if (!(await zstd.decompress(await zstd.compress(data, { level: 19, checksum: true }))).equals(data))
    throw new Error('async round trip')
  const records = Array.from({ length: 2000 }, (_, i) =>
    Buffer.from(JSON.stringify({ id: i, name: `user${i % 97}`, ok: i % 2 === 0 })),
  )
  const dictionary = new zstd.Dictionary(await zstd.trainDictionary(records, { size: 4096 }))
  if (!zstd.decompressSync(zstd.compressSync(records[7], { dictionary }), { dictionary }).equals(records[7]))
    throw new Error('dictionary')
  const out = []
  await pipeline(
    Readable.from([data]),
    zstd.createCompressStream(),
    zstd.createDecompressStream(),
    new Writable({
      write(chunk, _, done) {
        out.push(chunk)
        done()
      },
    }),
  )
  if (!Buffer.concat(out).equals(data)) throw new Error('streams')
  let failed = false
  try {
    zstd.decompressSync(frame.subarray(0, 10))
  } catch (error) {
    failed = error.code === 'ZSTD_error_srcSize_wrong'
  }
  if (!failed) throw new Error('errors')
  console.log(`platform check ok: ${process.platform}-${process.arch}, Node ${process.version}, binding ${binding}`)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
