// Small JSON records of the kind APIs and logs carry (similar shapes, varying values), for the
// dictionary tests and benchmark. Deterministic: the same seed gives the same records.
export function jsonRecords(count, seed = 1) {
  let state = seed
  const next = (n) => {
    state = (state * 1103515245 + 12345) & 0x7fffffff
    return state % n
  }
  const actions = ['login', 'logout', 'view_item', 'add_to_cart', 'checkout', 'search']
  const countries = ['FR', 'DE', 'US', 'JP', 'BR', 'IN', 'GB']
  return Array.from({ length: count }, (_, i) =>
    Buffer.from(
      JSON.stringify({
        id: 100000 + i,
        timestamp: `2026-11-30T${String(next(24)).padStart(2, '0')}:${String(next(60)).padStart(2, '0')}:00Z`,
        user: { id: `user_${next(5000)}`, country: countries[next(countries.length)], premium: next(2) === 1 },
        event: { action: actions[next(actions.length)], durationMs: next(5000), path: `/items/${next(900)}/details` },
        client: { agent: 'Mozilla/5.0 (X11; Linux x86_64)', version: `4.${next(20)}.${next(10)}` },
      }),
    ),
  )
}

// A new version of `data` with `count` edits spread through it, as a file gets between two
// releases: some bytes replaced, a line inserted, a stretch deleted, in turn. Deterministic.
export function edited(data, count) {
  const pieces = []
  let at = 0
  for (let i = 0; i < count; i++) {
    const position = Math.floor(((i + 0.5) * data.length) / count)
    pieces.push(data.subarray(at, position))
    at = position
    if (i % 3 === 0) {
      pieces.push(Buffer.from(`[edit ${i}]`))
      at += 8
    } else if (i % 3 === 1) {
      pieces.push(Buffer.from(`\nA line added in the new version, number ${i}.\n`))
    } else {
      at += 200
    }
  }
  pieces.push(data.subarray(Math.min(at, data.length)))
  return Buffer.concat(pieces)
}
