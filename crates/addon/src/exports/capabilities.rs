//! `capabilities`: what the JavaScript side needs to know about this build, libzstd and the
//! scheduling thresholds, read once.

use napi_derive::napi;
use zstd::zstd_safe;
use zstd_pool_core::compress::{self, DEFAULT_LEVEL};
use zstd_pool_core::pool::MAX_IDLE_LIMIT;
use zstd_pool_core::{decompress, mt, schedule};

use crate::exports::oneshot::SHARED_BELOW;
use crate::exports::pool::MAX_IDLE_MULTITHREADED;
use crate::napi::{lanes, OWN_BUFFER, RESULTS_IN_PLACE};

/// What `main.js` needs to know about this build and libzstd, read once when it loads.
#[napi(object)]
pub struct Capabilities {
  pub min_level: i32,
  pub max_level: i32,
  pub default_level: i32,
  /// The most worker threads libzstd accepts; 0 when it has no multi-threading (WASI).
  pub max_workers: u32,
  pub min_window_log_max: u32,
  pub max_window_log_max: u32,
  pub default_window_log_max: u32,
  /// Whether results can be written into the caller's slab (not under WASI).
  pub results_in_place: bool,
  /// Results smaller than this go into the slab; `main.js` keeps at least this much room.
  pub shared_below: u32,
  /// The slab offset that passes a Buffer made for one result instead of a slab.
  pub own_buffer: u32,
  /// Whether inputs and small results go through staging areas (see `staging.rs`): under WASI.
  pub staged: bool,
  /// Whether small async calls share long-lived threadpool work items (see `lanes.rs`): not
  /// under WASI, whose threads run work otherwise.
  pub lanes: bool,
  pub max_idle_contexts_limit: u32,
  pub max_idle_multithreaded_contexts_limit: u32,
  /// libzstd's bounds for each compression parameter this build supports (besides the level,
  /// the checksum and the workers), for `main.js` to check values against.
  pub compress_parameters: Vec<ParameterBounds>,
  /// The thresholds of where async work runs that the JavaScript side applies.
  pub schedule: Schedule,
}

/// The JavaScript side's thresholds of where async work runs (see the core's `schedule`, where
/// each is explained).
#[napi(object)]
pub struct Schedule {
  pub max_inline_micros: f64,
  pub max_burst_inline_micros_with_lanes: f64,
  pub max_burst_inline_micros: f64,
  pub max_inline_share_ms: f64,
  pub max_inline_share_ms_in_a_page: f64,
  pub share_burst_after_ms: f64,
  pub batch_group_bytes: u32,
  pub batch_team_group_bytes: f64,
}

/// libzstd's bounds for one compression parameter (`ZSTD_cParam_getBounds`).
#[napi(object)]
pub struct ParameterBounds {
  /// Its `ZSTD_c_*` number.
  pub id: i32,
  pub min: i32,
  pub max: i32,
}

#[napi]
pub fn capabilities() -> Capabilities {
  Capabilities {
    min_level: zstd_safe::min_c_level(),
    max_level: zstd_safe::max_c_level(),
    default_level: DEFAULT_LEVEL,
    max_workers: mt::max_workers(),
    min_window_log_max: decompress::MIN_WINDOW_LOG_MAX,
    max_window_log_max: decompress::MAX_WINDOW_LOG_MAX,
    default_window_log_max: decompress::DEFAULT_WINDOW_LOG_MAX,
    results_in_place: RESULTS_IN_PLACE,
    staged: cfg!(target_family = "wasm"),
    lanes: lanes::ENABLED,
    shared_below: SHARED_BELOW as u32,
    own_buffer: OWN_BUFFER,
    max_idle_contexts_limit: MAX_IDLE_LIMIT as u32,
    max_idle_multithreaded_contexts_limit: MAX_IDLE_MULTITHREADED,
    compress_parameters: compress::param::ALL
      .iter()
      .filter_map(|&id| compress::bounds(id).map(|(min, max)| ParameterBounds { id, min, max }))
      .collect(),
    schedule: Schedule {
      max_inline_micros: schedule::MAX_INLINE_MICROS,
      max_burst_inline_micros_with_lanes: schedule::MAX_BURST_INLINE_MICROS_WITH_LANES,
      max_burst_inline_micros: schedule::MAX_BURST_INLINE_MICROS,
      max_inline_share_ms: schedule::MAX_INLINE_SHARE_MS,
      max_inline_share_ms_in_a_page: schedule::MAX_INLINE_SHARE_MS_IN_A_PAGE,
      share_burst_after_ms: schedule::SHARE_BURST_AFTER_MS,
      batch_group_bytes: schedule::BATCH_GROUP_BYTES,
      batch_team_group_bytes: schedule::BATCH_TEAM_GROUP_BYTES as f64,
    },
  }
}
