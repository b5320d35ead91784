// Payloads for the benchmarks: cut from the shared corpus (text, HTML, URLs, a PDF, a JPEG,
// protobuf), several per size, so that no single file decides a result.
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('../__test__/corpus', import.meta.url))
const files = readdirSync(dir)
  .sort()
  .map((name) => readFileSync(`${dir}/${name}`))
const all = Buffer.concat(files)

/** `count` payloads of `size` bytes, taken at evenly spread offsets of the concatenated corpus. */
export function payloads(size, count = 15) {
  const windows = []
  for (let i = 0; i < count; i++) {
    const offset = Math.floor((i * (all.length - size)) / Math.max(1, count - 1))
    windows.push(Buffer.from(all.subarray(offset, offset + size)))
  }
  return windows
}

/** One payload of `size` bytes made by repeating the corpus. */
export function repeated(size) {
  const out = Buffer.allocUnsafe(size)
  for (let offset = 0; offset < size; offset += all.length) all.copy(out, offset, 0, Math.min(all.length, size - offset))
  return out
}
