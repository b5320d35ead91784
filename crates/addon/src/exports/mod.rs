//! The `#[napi]` exports, by feature. Each turns typed napi-rs arguments into a core call, and
//! its result (or [`Failure`](zstd_pool_core::error::Failure)) into JavaScript through `napi/`.

pub mod batch;
pub mod capabilities;
pub mod dictionary;
pub mod dictionary_set;
#[cfg(feature = "bench-floor")]
pub mod floor;
pub mod frame;
pub mod oneshot;
pub mod pool;
pub mod prefix;
pub mod reference;
pub mod seekable;
#[cfg(target_family = "wasm")]
pub mod staging;
pub mod stream;
