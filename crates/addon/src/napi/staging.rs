//! The staging area: the WebAssembly build's way in and out of the module's memory.
//!
//! Under WASI (emnapi), a JavaScript buffer's memory lives outside the module's linear memory.
//! Handed a Buffer, emnapi copies the whole `ArrayBuffer` behind it (8 KiB for a small pooled
//! Buffer) into a fresh allocation of the module's heap, kept until that `ArrayBuffer` is
//! collected; a view of the module's memory is recognised only while the `SharedArrayBuffer` it
//! was made on is still the memory's current one, else by catching an exception; and a result
//! Buffer is a copy into a fresh `ArrayBuffer`, which needs `Buffer` (absent in browsers).
//! Profiled on Node 20, that was most of the time of a 1 KiB call.
//!
//! So under WASI, calls pass no bytes, and plain calls no arguments. A staging area is a native
//! allocation, which JavaScript sees as a `Uint8Array` over the module's memory (an emnapi memory
//! view, which stays usable as the memory grows): `lib/staging.js` lays a call out in it (its
//! numbers, then the input: see [`call`]), native code reads it in place and writes a small
//! result past it, which `lib/results.js` copies out. Reading a number argument is a trip
//! through JavaScript under emnapi (and an unsigned one allocates a typed array), and reading an
//! `Int32Array` of settings, which is no view of the module's memory, goes through an exception
//! (emnapi tells an `ArrayBuffer` from a `SharedArrayBuffer` by catching one): the numbers of a
//! call in the area halved a 1 KiB compression (see docs/wasm.md). Larger
//! results stay native (`NativeBytes`) and are copied out through a view of their
//! own. Each copy of the JavaScript that loads the module (two versions of the package, or
//! `main.js` and `browser.mjs` in one bundle) owns an area of its own, by an id from
//! `stagingOwner`; an owner's area is replaced (and the old one freed) only by its own
//! `stagingArea` call, made between calls, so it never changes during a call.
//!
//! A plain staged call takes no argument and returns no number for a result written into its
//! area: the owner writes its id into [`CALLER`] as it lays the call out, and native code writes
//! the result's length over the call's first number. A call with a dictionary, a prefix or a
//! signal passes its owner and the number its owner gave this layout ([`Caller::Given`]): reading
//! those arguments can run code (emnapi copies a Buffer with methods a caller may have patched),
//! which may have laid out another call meanwhile, in this area or another's. Each argument
//! read and each number returned is a Node-API call, which emnapi makes in JavaScript (a typed
//! array over the module's memory each): the three of a 1 KiB decompression were about a sixth
//! of its time (a CPU profile on Node 26, 2026-12-04).
//!
//! Native builds need none of this: the module, and the exports that use it
//! (`exports/staging.rs`), exist only in the WebAssembly build.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use napi::{sys, Env};

use zstd_pool_core::error::Failure;

#[link(wasm_import_module = "emnapi")]
extern "C" {
  /// emnapi's typed array over `byte_length` bytes of the module's memory at `external_data`
  /// (`typedarray_type` 1: `Uint8Array`), calling `finalize_cb` when it is collected.
  fn emnapi_create_memory_view(
    env: sys::napi_env,
    typedarray_type: i32,
    external_data: *mut c_void,
    byte_length: usize,
    finalize_cb: sys::napi_finalize,
    finalize_hint: *mut c_void,
    result: *mut sys::napi_value,
  ) -> sys::napi_status;
}

// signal.c: the words live there for good, and both functions take no argument.
unsafe extern "C" {
  safe fn zstd_pool_signal_words() -> *mut c_void;
  safe fn zstd_pool_signal() -> i32;
}

const UINT8_ARRAY: i32 = 1;

/// A staging area, its owner, and its generation (which a collected view names, so that it
/// frees only the area it was made for).
struct Area {
  /// Never read here before JavaScript or a call has written it: left uninitialised, as
  /// zeroing an area made for a large input cost more than the copy into it. In 8-byte words,
  /// so that a call's numbers (`f64`s) are aligned.
  memory: Box<[MaybeUninit<u64>]>,
  owner: u32,
  generation: usize,
}

/// The live areas: one per owner, a handful in all.
static AREAS: Mutex<Vec<Area>> = Mutex::new(Vec::new());
static GENERATION: AtomicUsize = AtomicUsize::new(0);

/// The owner of the staged call being made: JavaScript writes it, through the view
/// [`caller_view`] makes, as it lays out each call, and a call that reads no arguments reads it
/// first ([`Caller::Written`]), so that no JavaScript runs between that write and the read. Only
/// the JavaScript thread that loaded this instance of the module reads or writes it (threadpool
/// workers run no staged call's entry).
static CALLER: AtomicU32 = AtomicU32::new(0);

fn areas() -> std::sync::MutexGuard<'static, Vec<Area>> {
  AREAS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes out (for the caller to free, outside the lock) the area `matches` picks.
fn take(matches: impl Fn(&Area) -> bool) -> Option<Area> {
  let mut areas = areas();
  let index = areas.iter().position(matches)?;
  Some(areas.swap_remove(index))
}

/// Frees `owner`'s area and makes a new one of `len` bytes; a view of it for JavaScript.
pub fn replace(env: &Env, owner: u32, len: usize) -> Result<sys::napi_value, Failure> {
  drop(take(|area| area.owner == owner));
  let mut memory = Vec::<MaybeUninit<u64>>::new();
  let words = len.div_ceil(8);
  memory.try_reserve_exact(words).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  // Within the capacity reserved: no allocation, and no bytes written (they are uninit).
  memory.resize(words, MaybeUninit::uninit());
  let mut memory = memory.into_boxed_slice();
  let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
  // `memory` is kept in `AREAS` until its owner replaces it or the view's finalizer (for this
  // generation) frees it; the owner drops the view before replacing it.
  let freed = Freed { finalize, hint: generation as *mut c_void };
  let value = memory_view(env, memory.as_mut_ptr().cast(), len, Some(freed)).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  areas().push(Area { memory, owner, generation });
  Ok(value)
}

/// A view of [`CALLER`], for JavaScript to write the owner of each staged call into (a
/// `Uint8Array` of its 4 bytes, little-endian).
pub fn caller_view(env: &Env) -> Result<sys::napi_value, Failure> {
  memory_view(env, CALLER.as_ptr().cast(), std::mem::size_of::<u32>(), None)
}

/// A view of the two words the JavaScript thread waits on for the module's threads
/// (`signal.c`, `lib/workers.js`).
pub fn signal_view(env: &Env) -> Result<sys::napi_value, Failure> {
  memory_view(env, zstd_pool_signal_words(), 2 * std::mem::size_of::<i32>(), None)
}

/// Wakes the JavaScript thread through the signal words, from a thread: whether it waited on them
/// (if not, it must be woken another way).
pub fn signal() -> bool {
  zstd_pool_signal() != 0
}

/// What frees the memory under a view once the view is collected.
struct Freed {
  finalize: unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void),
  hint: *mut c_void,
}

/// emnapi's `Uint8Array` over the `len` bytes of the module's memory at `data`, which stay
/// allocated and unmoved until `freed` frees them, or for good without it: the one place views
/// of the module's memory are made.
fn memory_view(env: &Env, data: *mut c_void, len: usize, freed: Option<Freed>) -> Result<sys::napi_value, Failure> {
  let (finalize, hint) = freed.map_or((None, ptr::null_mut()), |freed| (Some(freed.finalize), freed.hint));
  let mut value = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; `data` is `len` bytes of the module's memory that
  // stay readable and writable as long as the view (see the callers). Runs no JavaScript.
  let status = unsafe { emnapi_create_memory_view(env.raw(), UINT8_ARRAY, data, len, finalize, hint, &mut value) };
  if status != sys::Status::napi_ok || value.is_null() {
    return Err(Failure::Napi("emnapi_create_memory_view"));
  }
  Ok(value)
}

unsafe extern "C" fn finalize(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
  drop(take(|area| area.generation == hint as usize));
}

/// The numbers of a staged call, as `lib/staging.js` writes them at the start of the area, one
/// `f64` each: the input's length, the microseconds the call may run on the spot, the most output
/// (decompression) and the window log bound (decompression), and how many settings follow
/// (compression's, one `i32` each, see `CompressParams::from_settings`), and the number of this
/// layout (counted by its owner). The input starts at the first 8-byte boundary past them. A
/// result written into the area has its length written over the first number
/// ([`RESULT_LENGTH_AT`]).
const NUMBERS: usize = 6;

/// Where in the area the length of a result written into it goes, as an `f64`: over the input's
/// length, which the call has read.
pub const RESULT_LENGTH_AT: u32 = 0;

/// Which of the numbers is the layout's own number (see [`Caller::Given`]).
const LAYOUT_AT: usize = 5;

/// A staged call, read from its owner's area.
pub struct Call<'a> {
  pub input: &'a [u8],
  pub inline_micros: f64,
  pub max_output_length: f64,
  pub window_log_max: u32,
  pub settings: &'a [i32],
  /// The area, where a small result may be written, and the offset it may be written from: the
  /// first 8-byte boundary past the input.
  pub area: *mut u8,
  pub capacity: usize,
  pub result_at: usize,
}

/// Whose staged call a native call makes.
#[derive(Clone, Copy)]
pub enum Caller {
  /// The owner in [`CALLER`]: for a call that reads no arguments, so that no code ran between
  /// its layout and now.
  Written,
  /// `owner`'s, laid out as its `layout`th: for a call that read arguments first. If code that
  /// ran meanwhile laid out another call there, the numbers differ and the call is refused.
  Given { owner: u32, layout: f64 },
}

/// The staged call of `caller` (see [`NUMBERS`]). Valid until the call returns: the area is
/// replaced only by its owner's `stagingArea`. `None` when the owner has no area, what it says
/// does not fit in it, or it holds another layout than the one named.
pub fn call<'a>(caller: Caller) -> Option<Call<'a>> {
  let owner = match caller {
    Caller::Written => CALLER.load(Ordering::Relaxed),
    Caller::Given { owner, .. } => owner,
  };
  let mut areas = areas();
  let memory = &mut areas.iter_mut().find(|area| area.owner == owner)?.memory;
  let (data, capacity) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
  if memory.len() < NUMBERS {
    return None;
  }
  // SAFETY: the area's memory stays allocated and unmoved (a boxed slice; the list may move the
  // box, not its contents) until its owner replaces it or a finalizer frees it, which only
  // JavaScript can cause, and the caller (a native call) runs none before it is done with it.
  // Its first words are the call's numbers, which the owner wrote (as JavaScript writes any
  // Buffer a call reads; any bit pattern is an `f64`), then the settings and the input, which it
  // wrote too, read only once checked to lie in the area: the settings 4-byte aligned (the area
  // is 8-byte aligned, the settings 48 bytes into it). One block for the three reads, so that the
  // checks between them stay next to them.
  let (numbers, settings, input, result_at) = unsafe {
    let numbers = std::slice::from_raw_parts(data.cast::<f64>().cast_const(), NUMBERS);
    // Saturating conversions: JavaScript writes checked whole numbers, and anything else is
    // caught by the bounds below or by the call itself.
    let (len, settings_len) = (numbers[0] as usize, numbers[4] as usize);
    let input_at = (NUMBERS * 8).checked_add(settings_len.checked_mul(4)?)?.checked_next_multiple_of(8)?;
    let result_at = input_at.checked_add(len)?.checked_next_multiple_of(8)?;
    if input_at.checked_add(len)? > capacity {
      return None;
    }
    let settings = std::slice::from_raw_parts(data.add(NUMBERS * 8).cast::<i32>().cast_const(), settings_len);
    let input = std::slice::from_raw_parts(data.add(input_at).cast_const(), len);
    (numbers, settings, input, result_at)
  };
  if let Caller::Given { layout, .. } = caller {
    if numbers[LAYOUT_AT] != layout {
      return None;
    }
  }
  Some(Call {
    input,
    inline_micros: numbers[1],
    max_output_length: numbers[2],
    window_log_max: numbers[3] as u32,
    settings,
    area: data,
    capacity,
    result_at,
  })
}

/// Whether `len` bytes at `address` lie in a staging area: under WASI, the one memory that
/// JavaScript sees and native code can write.
pub fn contains(address: usize, len: usize) -> bool {
  areas().iter().any(|area| {
    let start = area.memory.as_ptr() as usize;
    address >= start && address.saturating_add(len) <= start + area.memory.len() * 8
  })
}

/// A view of `bytes`, which the caller keeps unmoved until JavaScript has dropped the view.
pub fn view(env: &Env, bytes: &[u8]) -> Result<sys::napi_value, Failure> {
  memory_view(env, bytes.as_ptr().cast_mut().cast(), bytes.len(), None)
}
