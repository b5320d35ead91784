//! zstd-pool's core, in plain Rust with no Node-API (the crate has no napi dependency): the
//! codecs (`compress`, `decompress`), one-shot calls (`oneshot`), a batch's results (`batch`, and packed: `packed`),
//! the context pools (`pool`) and their sweeper (`sweep`), the multi-threaded cache (`mt`), the
//! stream state machines (`stream`), the frame walk (`frame`), dictionaries (`dict`, and sets of
//! them that frames choose from: `dict_set`), the failures (`error`), and every threshold of where async work runs (`schedule`). The addon
//! (`crates/addon`) exports it to JavaScript; the fuzzers, the tests and the benches here use it
//! directly.
//!
//! The only `unsafe` here is in `ffi`: the libzstd (and glibc) calls that `zstd-safe` does not
//! make safe.

#![deny(clippy::all, clippy::undocumented_unsafe_blocks)]

pub mod batch;
pub mod compress;
pub mod decompress;
pub mod dict;
pub mod dict_set;
pub mod error;
pub mod ffi;
pub mod frame;
pub mod memory;
pub mod mt;
pub mod oneshot;
pub mod packed;
pub mod pool;
pub mod schedule;
pub mod seekable;
pub mod stream;
pub mod sweep;
