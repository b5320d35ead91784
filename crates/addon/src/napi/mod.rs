//! Every raw Node-API call of the addon, and so every `unsafe` block of it: the calls made by
//! hand where napi-rs's typed layer would cost measurably more or cannot say what is needed.
//! Everything outside this folder uses typed napi-rs arguments.
//!
//! What lives here:
//! - **result Buffers** (`js.rs`): copies of native bytes, Buffers filled natively before any JavaScript
//!   can see them, and the caller's slab (small results share one `ArrayBuffer`, carved by
//!   `main.js`);
//! - **work on the libuv threadpool** (`work.rs`): its Promise, its lifecycle and its
//!   cancellation; and the lanes that let small calls share work items (`lanes.rs`);
//! - **staging areas** (`staging.rs`): the WebAssembly build's way in and out of its memory;
//! - **the WebAssembly build's threads** (`workers.rs`): where its async work runs, in place of
//!   emnapi's threadpool, and the words they wake the JavaScript thread through (`signal.c`);
//! - **exports registered by hand** (`plain.rs`): the plain one-shot calls (and under WASI the
//!   plain staged ones), without napi-derive's per-call borrow scope;
//! - **errors** (`js.rs`): a [`Failure`] thrown or rejected as the JavaScript error it stands for;
//! - **arguments read by hand** (`js.rs`): the slab a result is written into (`Target`), and
//!   `ViewOr`, a byte view or an instance of one of two classes, told apart without running
//!   JavaScript.
//!
//! What the code here may assume, and what it guarantees:
//! - Every function runs on the JavaScript thread that owns `env`, except a work item's `execute`
//!   (and a lane's `drain`), which run on a libuv thread and touches no JavaScript value.
//! - These Node-API calls can run JavaScript (user code, which may resize, detach or transfer
//!   any buffer it can reach, and call back into this addon): creating a Promise or async work
//!   (`async_hooks` init hooks), and creating an error (V8 reads `Error.stackTraceLimit`, which
//!   can be a getter). No pointer into memory that JavaScript can reach is held across them:
//!   queued work owns its input before `queue` is called, and writes only native memory,
//!   copied into a Buffer on completion. (No JavaScript object is ever truly unreachable:
//!   `node:inspector` can find any, so off-thread work never writes a Buffer.)
//! - The other calls made here (buffer creation and inspection, references, numbers) run no
//!   JavaScript; allocating may collect garbage, which runs no JavaScript either (finalizers
//!   are deferred) and moves no `ArrayBuffer` memory.

mod js;
pub mod lanes;
pub mod plain;
#[cfg(target_family = "wasm")]
mod staging;
mod work;
#[cfg(target_family = "wasm")]
mod workers;

pub use js::{
  array, buffer_copy, error_value, filled_buffer, handed_over, result_bytes, scratch_result, settled_array, throw, Js, Slot,
  Target, ViewOr, JS_ALLOCATES_FROM, OWN_BUFFER, RESULTS_IN_PLACE,
};
#[cfg(target_family = "wasm")]
pub use js::{settle_workers, staged, staging_area, staging_caller, workers_signal};
#[cfg(target_family = "wasm")]
pub use staging::{Call as StagedCall, Caller};
pub use work::{queue, Cancellation, IntoJs, Job, Produced, Task};
