'use strict'
// The native binding, loaded once by the platform (lib/platform.js in Node: index.js, generated
// by napi-rs from the Rust crate; lib/platform-browser.js in a browser: the WebAssembly build).
// It takes typed arguments only and is not part of the public API: the modules of lib/ read and
// check everything a caller gives before they call it.

const { loadBinding } = require('#platform')

const binding = loadBinding()

/** What this build can do (levels, bounds, whether it is the WebAssembly build), asked once. */
const capabilities = binding.capabilities()

module.exports = { binding, capabilities }
