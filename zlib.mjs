// The ES module entry of zstd-pool/zlib: the API of zlib.js as named exports (and as the default export).
// A static import, not createRequire, as in main.mjs: bundlers follow it.
import zlib from './zlib.js'

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
