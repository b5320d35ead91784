import * as zstd from 'zstd-pool'

// For the end-to-end test (scripts/test-browser.mjs), which drives this page.
window.zstd = zstd

const input = document.querySelector('#input')
const level = document.querySelector('#level')
const result = document.querySelector('#result')
level.min = zstd.MIN_LEVEL
level.max = zstd.MAX_LEVEL
level.value = zstd.DEFAULT_LEVEL

async function roundTrip() {
  try {
    const text = new TextEncoder().encode(input.value)
    const started = performance.now()
    const frame = await zstd.compress(text, { level: Number(level.value), checksum: true })
    const back = await zstd.decompress(frame)
    const micros = Math.round((performance.now() - started) * 1000)
    const same = back.length === text.length && back.every((byte, i) => byte === text[i])
    result.textContent = [
      `${text.length} bytes -> ${frame.length} bytes of zstd (level ${level.value}) -> ${back.length} bytes`,
      same ? 'round trip: identical' : 'round trip: DIFFERENT',
      `${micros} µs, crossOriginIsolated: ${window.crossOriginIsolated}`,
      `frame: ${Array.from(frame.subarray(0, 24), (byte) => byte.toString(16).padStart(2, '0')).join(' ')}${frame.length > 24 ? ' …' : ''}`,
    ].join('\n')
    document.body.dataset.status = same ? 'ok' : 'mismatch'
  } catch (error) {
    result.textContent = `${error.name}: ${error.message}${error.code ? ` (${error.code})` : ''}`
    document.body.dataset.status = 'error'
  }
}

input.addEventListener('input', roundTrip)
level.addEventListener('change', roundTrip)
await roundTrip()

// The timings load when asked for: at once with `?rounds=N` (as the end-to-end test does).
const time = document.querySelector('#time')
async function timings() {
  time.disabled = true
  const { start } = await import('./bench.js')
  await start()
  time.disabled = false
}
time.addEventListener('click', timings)
if (new URLSearchParams(location.search).has('rounds')) await timings()
