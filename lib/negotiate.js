'use strict'
// Content negotiation for HTTP responses (http.js): which content coding to answer a request's
// Accept-Encoding with, as RFC 9110 (sections 12.4.2 and 12.5.3) says. Plain functions of
// strings: no Node modules, nothing of the request object read here.

/** A qvalue: "0" to "1", with at most three decimals (RFC 9110, 12.4.2). */
const QVALUE = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/

/** A coding's name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/**
 * The codings `header` (an Accept-Encoding value: a string, an array of them, or undefined)
 * names, lowercased, with their quality (0 to 1). An entry that does not parse is skipped, as if
 * it were not there; a coding named twice keeps its first quality. The whole header is read (in
 * one pass: Node refuses request headers past 16 KiB by default): a refusal (`q=0`) at its end
 * counts as much as one at its start.
 */
function acceptedCodings(header) {
  const accepted = new Map()
  const text = typeof header === 'string' ? header : Array.isArray(header) ? header.join(',') : ''
  for (const entry of text.split(',')) {
    const [name, ...parameters] = entry.split(';')
    const named = name.trim().toLowerCase()
    // x-gzip is gzip (RFC 9110, 8.4.1.3).
    const coding = named === 'x-gzip' ? 'gzip' : named
    if (!TOKEN.test(coding) || accepted.has(coding)) continue
    const quality = qualityOf(parameters)
    if (quality !== undefined) accepted.set(coding, quality)
  }
  return accepted
}

/** The quality the parameters of one entry give (1 when none does); undefined if malformed (a
 * q that is not a qvalue, or two of them). */
function qualityOf(parameters) {
  let quality
  for (const parameter of parameters) {
    const [key, value = '', ...rest] = parameter.split('=')
    if (key.trim().toLowerCase() !== 'q') continue
    const text = value.trim()
    if (quality !== undefined || rest.length > 0 || !QVALUE.test(text)) return undefined
    quality = Number(text)
  }
  return quality ?? 1
}

/**
 * The coding to answer with: the one of `offered` (in the server's order of preference) that
 * `header` rates highest, ties going to the earlier of `offered`; 'identity' when the client rates
 * none of them above 0, or rates identity higher. A coding the client does not name is rated as
 * `*` is, else 0; identity, when neither it nor `*` is named, as the lowest rating the client
 * gave (so any coding it names is as good).
 */
function chooseEncoding(header, offered) {
  const accepted = acceptedCodings(header)
  if (accepted.size === 0) return 'identity'
  const any = accepted.get('*')
  let best = 'identity'
  let bestQuality = 0
  for (const coding of offered) {
    const quality = accepted.get(coding) ?? any ?? 0
    if (quality > bestQuality) {
      best = coding
      bestQuality = quality
    }
  }
  if (best === 'identity') return best
  const identity = accepted.get('identity') ?? any ?? lowest(accepted.values())
  return bestQuality >= identity ? best : 'identity'
}

/** The lowest of `qualities` (a loop, not Math.min(...): a header of a million entries would pass
 * more arguments than a call takes). */
function lowest(qualities) {
  let least = 1
  for (const quality of qualities) if (quality < least) least = quality
  return least
}

module.exports = { acceptedCodings, chooseEncoding }
