// The ES module entry of zstd-pool/zlib: the API of zlib.js as named exports (and as the default export).
import { createRequire } from 'node:module'

const zlib = createRequire(import.meta.url)('./zlib.js')

export const {
  constants,
  ZstdCompress,
  ZstdDecompress,
  createZstdCompress,
  createZstdDecompress,
  zstdCompress,
  zstdCompressSync,
  zstdDecompress,
  zstdDecompressSync,
} = zlib

export default zlib
