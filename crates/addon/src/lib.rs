//! zstd-pool's native binding: the core crate (`zstd-pool-core`: the codecs, the pools, the
//! multi-threaded cache, the stream state machines, the frame walk, dictionaries) exported to
//! JavaScript with typed napi-rs arguments. It is called only by the package entry, `main.js`,
//! which checks and normalises every argument first (JavaScript validates, native computes); the
//! binding itself is not part of the public API.
//!
//! Two rooms:
//! - `exports/`: the `#[napi]` exports, one file per feature (one-shot calls, dictionaries,
//!   patch-from references, streams, batches, frames, the pools, what the build can do; the
//!   WebAssembly build's staged calls; the benchmark's floor, behind the `bench-floor` feature);
//! - `napi/`: every raw Node-API call, and so every `unsafe` block of the addon (result
//!   Buffers, errors, async work and its cancellation, the lanes, the staging areas), with the
//!   two classes that belong to them: `NativeBytes` (a result held natively) and
//!   `Cancellation` (a queued call's cancel switch).
//!
//! `exports/` may use `napi/` and the core; `napi/` uses only the core; the core uses neither.
//!
//! Every exported function runs on a JavaScript thread, and no JavaScript runs during it
//! except where `napi/` says (creating a Promise, async work or an error): the typed
//! arguments, the input slice among them, are read without running any, and are used only
//! before such a point. Work for the threadpool owns a copy of its input.

#![deny(clippy::all, clippy::undocumented_unsafe_blocks)]

pub mod exports;
pub mod napi;
