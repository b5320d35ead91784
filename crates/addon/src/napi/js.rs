//! JavaScript values made by hand: result Buffers (copies of native bytes, Buffers filled
//! natively before any JavaScript can see them, the caller's slab), errors, and the few plain
//! values the exports return. The rules are those of the folder (see `mod.rs`).

use std::ffi::CStr;
use std::io::Write;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::Mutex;

use napi::bindgen_prelude::{
  BufferSlice, FromNapiRef, FromNapiValue, JavaScriptClassExt, ToNapiValue, TypeName, ValidateNapiValue,
};
use napi::JsValue;
use napi::{sys, Env, ValueType};
use napi_derive::napi;
use zstd::zstd_safe::WriteBuf;

use zstd_pool_core::error::{ErrorClass, Failure};
use zstd_pool_core::memory::{try_vec, Chunk, Scratch};

/// Whether native code can write a Buffer's memory in place. Under WASI (emnapi) a Buffer's
/// memory lives outside the module's, and what the module writes through a pointer does not
/// reach it: results are written only into staging areas (see `staging.rs`), or held natively
/// and copied out by `main.js`.
pub const RESULTS_IN_PLACE: bool = !cfg!(target_family = "wasm");

/// A JavaScript value made here, handed to napi-rs as it is.
pub struct Js(sys::napi_value);

impl ToNapiValue for Js {
  unsafe fn to_napi_value(_env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
    Ok(value.0)
  }
}

impl Js {
  pub fn from_raw(value: sys::napi_value) -> Self {
    Self(value)
  }

  pub fn raw(&self) -> sys::napi_value {
    self.0
  }

  #[inline]
  pub fn number(env: &Env, value: u32) -> Result<Self, Failure> {
    env.create_uint32(value).map(|number| Self(number.raw())).map_err(|_| Failure::Napi("napi_create_uint32"))
  }

  /// `false`: what a call that is to wait for the next turn of the event loop returns.
  pub fn not_run(env: &Env) -> Result<Self, Failure> {
    false.into_unknown(env).map(|value| Self(value.raw())).map_err(|_| Failure::Napi("napi_get_boolean"))
  }
}

pub(crate) fn checked(status: sys::napi_status, call: &'static str) -> Result<(), Failure> {
  if status == sys::Status::napi_ok {
    Ok(())
  } else {
    Err(Failure::Napi(call))
  }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The JavaScript error for `failure`: an `Error`, `RangeError` or `TypeError` whose `code` names the cause,
/// defined as its own property (so no `code` setter on `Error.prototype` runs). `None` when it
/// could not be made; JavaScript that ran meanwhile may then have left an exception pending.
pub fn error_value(env: &Env, failure: &Failure) -> Option<sys::napi_value> {
  let shape = failure.shape();
  let mut error = ptr::null_mut();
  let create = match shape.class {
    ErrorClass::Error => sys::napi_create_error,
    ErrorClass::RangeError => sys::napi_create_range_error,
    ErrorClass::TypeError => sys::napi_create_type_error,
  };
  // A message that could not be made is null, which napi_create_error reports as a status.
  // SAFETY: on the JavaScript thread of `env`; the message is a string made on it, or null.
  let status = unsafe { create(env.raw(), ptr::null_mut(), string(env, &shape.message), &mut error) };
  if status != sys::Status::napi_ok || error.is_null() {
    return None;
  }
  let mut properties = vec![(c"code", string(env, shape.code))];
  if matches!(failure, Failure::Aborted) {
    // Node names its AbortErrors so.
    properties.push((c"name", string(env, "AbortError")));
  }
  define_own(env, error, &properties);
  Some(error)
}

/// Defines `properties` on `object` as its own (writable, enumerable, configurable): defining
/// runs no setter (one on `Object.prototype`, `Error.prototype` or `Array.prototype`).
fn define_own(env: &Env, object: sys::napi_value, properties: &[(&CStr, sys::napi_value)]) -> sys::napi_status {
  let descriptors: Vec<_> = properties
    .iter()
    .map(|&(name, value)| sys::napi_property_descriptor {
      utf8name: name.as_ptr(),
      name: ptr::null_mut(),
      method: None,
      getter: None,
      setter: None,
      value,
      attributes: sys::PropertyAttributes::writable | sys::PropertyAttributes::enumerable | sys::PropertyAttributes::configurable,
      data: ptr::null_mut(),
    })
    .collect();
  // SAFETY: on the JavaScript thread of `env`; `object` and the values were made on it; the
  // names outlive the call (they are borrowed for it), which runs no JavaScript.
  unsafe { sys::napi_define_properties(env.raw(), object, descriptors.len(), descriptors.as_ptr()) }
}

/// An array of `elements`, defined as own properties (so that no setter on `Array.prototype`
/// runs).
pub fn array(env: &Env, elements: &[Js]) -> Result<Js, Failure> {
  own_elements(env, elements, &[])
}

/// An array of `elements` whose own `then` is no function (0): a Promise it resolves reads no
/// getter (one on `Array.prototype` or `Object.prototype`) as it settles.
pub fn settled_array(env: &Env, elements: &[Js]) -> Result<Js, Failure> {
  let zero = Js::number(env, 0)?;
  own_elements(env, elements, &[(c"then", zero.0)])
}

/// An array of `elements`, and `named` properties, all defined as own properties.
fn own_elements(env: &Env, elements: &[Js], named: &[(&CStr, sys::napi_value)]) -> Result<Js, Failure> {
  let len = u32::try_from(elements.len()).map_err(|_| Failure::OutOfMemory { bytes: elements.len() })?;
  let array = env.create_array(len).map_err(|_| Failure::Napi("napi_create_array_with_length"))?.raw();
  // The indices' names end to end, each ended by a NUL: one allocation, not one per element.
  let mut names = Vec::new();
  let mut ends = Vec::new();
  let bytes = elements.len().saturating_mul(8);
  names.try_reserve(bytes).map_err(|_| Failure::OutOfMemory { bytes })?;
  ends.try_reserve_exact(elements.len()).map_err(|_| Failure::OutOfMemory { bytes })?;
  for index in 0..elements.len() {
    // Writing into a Vec cannot fail.
    let _ = write!(names, "{index}\0");
    ends.push(names.len());
  }
  let mut start = 0;
  let mut properties: Vec<_> = ends
    .iter()
    .zip(elements)
    .map(|(&end, value)| {
      let name = CStr::from_bytes_with_nul(&names[start..end]).unwrap_or_default();
      start = end;
      (name, value.0)
    })
    .collect();
  properties.extend_from_slice(named);
  if define_own(env, array, &properties) != sys::Status::napi_ok {
    return Err(Failure::Napi("napi_define_properties"));
  }
  Ok(Js(array))
}

/// A JavaScript string holding a copy of `text`; null if it could not be made.
pub(crate) fn string(env: &Env, text: &str) -> sys::napi_value {
  env.create_string(text).map_or(ptr::null_mut(), |string| string.raw())
}

/// Throws `failure` as its JavaScript error and returns what tells napi-rs that an exception is
/// pending (so that it throws nothing else). For `.map_err` at the end of an exported function.
/// If making the error ran JavaScript that threw, that exception is what the call throws.
pub fn throw(env: &Env, failure: Failure) -> napi::Error {
  let pending = napi::Error::new(napi::Status::PendingException, failure.shape().message);
  match error_value(env, &failure) {
    Some(error) if env.throw(Js(error)).is_ok() => pending,
    _ if exception_pending(env) => pending,
    _ => napi::Error::from_reason(failure.shape().message),
  }
}

pub(crate) fn exception_pending(env: &Env) -> bool {
  let mut pending = false;
  // SAFETY: on the JavaScript thread of `env`; reads a flag.
  unsafe { sys::napi_is_exception_pending(env.raw(), &mut pending) };
  pending
}

// ---------------------------------------------------------------------------------------------
// Result Buffers

/// Memory that native code may write and JavaScript will own, handed to the codecs as an output
/// buffer without claiming it is initialised (Node does not clear new Buffers).
pub struct Uninit<'a> {
  data: NonNull<u8>,
  capacity: usize,
  filled: usize,
  _memory: PhantomData<&'a mut [u8]>,
}

impl Uninit<'_> {
  /// How many bytes from the start have been written.
  pub fn filled(&self) -> usize {
    self.filled
  }

  /// Writes `bytes` at the start; the caller made sure they fit (see where the room came from).
  pub fn write(&mut self, bytes: &[u8]) {
    let len = bytes.len().min(self.capacity);
    // `bytes` is native memory, never the room itself.
    // SAFETY: `data` has room for `capacity` bytes (see `WriteBuf` below); `len` is at most that.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.data.as_ptr(), len) };
    self.filled = len;
  }
}

// SAFETY: `as_mut_ptr` points at `capacity` bytes that are writable for the borrow's lifetime
// (see where an `Uninit` is made), and `as_slice` covers only what a write reported as filled.
unsafe impl WriteBuf for Uninit<'_> {
  fn as_slice(&self) -> &[u8] {
    // SAFETY: the first `filled` bytes were written (`filled_until`), within `capacity`.
    unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.filled) }
  }
  fn capacity(&self) -> usize {
    self.capacity
  }
  fn as_mut_ptr(&mut self) -> *mut u8 {
    self.data.as_ptr()
  }
  unsafe fn filled_until(&mut self, n: usize) {
    self.filled = n;
  }
}

/// A new Buffer holding a copy of `bytes`. Copying into memory Node allocates is faster than
/// handing native memory over with a finalizer, and works where external buffers are
/// forbidden (Electron). The size is that of bytes already produced: earned, never claimed.
pub fn buffer_copy(env: &Env, bytes: &[u8]) -> Result<Js, Failure> {
  let (mut value, data, len) = (ptr::null_mut(), bytes.as_ptr().cast(), bytes.len());
  // SAFETY: on the JavaScript thread of `env`; `bytes` is readable; no JavaScript runs meanwhile.
  let status = unsafe { sys::napi_create_buffer_copy(env.raw(), len, data, ptr::null_mut(), &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: bytes.len() });
  }
  Ok(Js(value))
}

/// A packed batch's chunk (see the core's `packed.rs`), handed to JavaScript as a Buffer without a
/// copy when `external`: an external Buffer whose finalizer gives the chunk back to its pool once
/// JavaScript has collected it, so the next groups fill memory whose pages are already in (see the
/// chunk pool in the core's `memory.rs`). Copied, megabytes a group would pass through the
/// JavaScript thread once more. Every size alike (one finalizer per group costs little), so that
/// every chunk of a batch can be transferred, or not, alike. Where external buffers are refused
/// (Electron), napi-rs copies the bytes and gives the chunk back at once. Not `external` (worker
/// threads: see `externalMemory` in `lib/platform.js`), under WASI, and when empty, it goes as
/// [`scratch_result`] sends a scratch buffer: copied, and back to its pool at once.
pub fn handed_over(env: &Env, mut chunk: Chunk, external: bool) -> Result<Js, Failure> {
  if !external || chunk.is_empty() || !RESULTS_IN_PLACE || !may_be_main_thread() {
    // A chunk is a lease of the same kind as a scratch buffer's.
    return scratch_result(env, chunk);
  }
  let (data, len) = (chunk.as_mut_ptr(), chunk.len());
  // SAFETY: `data` points at the `len` bytes the chunk holds, which stay where they are, unread
  // and unwritten by native code, until the finalizer runs (moving the chunk moves its `Vec`, not
  // the bytes); V8 runs it once, after the last view of them is gone, on this thread.
  let buffer = unsafe { BufferSlice::from_external(env, data, len, chunk, |_env, chunk: Chunk| chunk.give_back()) };
  buffer.map(|buffer| Js(buffer.raw())).map_err(|_| Failure::OutOfMemory { bytes: len })
}

/// Whether this thread may be the process's main thread, the only one whose JavaScript takes
/// native memory (see [`handed_over`]). JavaScript says so from `isMainThread`, which a worker can
/// overwrite before it loads the package; on Linux the kernel has the last word (a thread whose id
/// is the process's, from `/proc/thread-self`, read once per thread: where it cannot be read, no).
/// Elsewhere the caller's word stands.
fn may_be_main_thread() -> bool {
  #[cfg(target_os = "linux")]
  {
    thread_local! {
      static MAIN: bool = std::fs::read_link("/proc/thread-self").ok().is_some_and(|path| {
        // "<process id>/task/<thread id>"
        let mut parts = path.to_str().unwrap_or_default().split('/');
        let (process, thread) = (parts.next(), parts.nth(1));
        process.is_some() && process == thread
      });
    }
    MAIN.with(|main| *main)
  }
  #[cfg(not(target_os = "linux"))]
  true
}

/// Results at least this large are allocated by JavaScript (see [`result_bytes`]).
pub const JS_ALLOCATES_FROM: usize = 64 << 20;

/// `bytes`, produced natively, as the call's result: a Buffer holding a copy, or, from
/// [`JS_ALLOCATES_FROM`] on, a [`NativeBytes`] that `main.js` moves into a Buffer it allocates
/// itself. Node 20 and 22 abort the process when native code cannot get a Buffer; allocating
/// in JavaScript throws a `RangeError` instead, and large allocations are the ones that fail.
pub fn result_bytes(env: &Env, bytes: Vec<u8>) -> Result<Js, Failure> {
  if bytes.len() < JS_ALLOCATES_FROM && RESULTS_IN_PLACE {
    return buffer_copy(env, &bytes);
  }
  let native = NativeBytes { bytes: Mutex::new(bytes) };
  // An instance made without calling its constructor.
  native.into_instance(env).map(|instance| Js(instance.value)).map_err(|_| Failure::Napi("NativeBytes"))
}

/// A result made in a scratch buffer: copied into a Buffer as [`result_bytes`] would, and the
/// buffer given back to its pool; or, from [`JS_ALLOCATES_FROM`] on, moved out of it.
pub fn scratch_result(env: &Env, mut scratch: Scratch) -> Result<Js, Failure> {
  if scratch.len() < JS_ALLOCATES_FROM && RESULTS_IN_PLACE {
    let result = buffer_copy(env, &scratch);
    scratch.give_back();
    return result;
  }
  let bytes = std::mem::take(&mut *scratch);
  scratch.give_back();
  result_bytes(env, bytes)
}

/// A large result in native memory, waiting for `main.js` to move it into a Buffer; under WASI,
/// every result that is not written into a staging area (`main.js` copies it out through
/// `view`, which needs no `Buffer` in the runtime, and then calls `release`).
#[napi]
pub struct NativeBytes {
  bytes: Mutex<Vec<u8>>,
}

#[napi]
impl NativeBytes {
  #[napi(getter)]
  pub fn length(&self) -> f64 {
    self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len() as f64
  }

  /// Copies the bytes into `target`, a Buffer as long as they are, and frees them.
  #[napi(ts_args_type = "target: Buffer")]
  pub fn move_into(&self, mut target: Target) -> bool {
    let bytes = std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
    if target.len != bytes.len() {
      return false;
    }
    let Some(mut room) = target.room(0, bytes.len(), &bytes) else {
      return false;
    };
    room.write(&bytes);
    true
  }

  /// Under WASI, a `Uint8Array` over the bytes, in the module's memory, valid until `release`
  /// (the caller copies it out and drops it); `null` in native builds.
  #[napi(ts_return_type = "Uint8Array | null")]
  pub fn view(&self, env: Env) -> napi::Result<Option<Js>> {
    #[cfg(target_family = "wasm")]
    let view = super::staging::view(&env, &self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())).map(Js);
    #[cfg(target_family = "wasm")]
    return view.map(Some).map_err(|failure| throw(&env, failure));
    #[cfg(not(target_family = "wasm"))]
    {
      let _ = env;
      Ok(None)
    }
  }

  /// Frees the bytes.
  #[napi]
  pub fn release(&self) {
    drop(std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())));
  }
}

/// A new Buffer of `len` bytes, written by `fill` before any JavaScript can see it: the result
/// Buffer is decoded into in place, with no copy. `len` must be earned by the input (bounded by
/// it and by a fixed cap): Node 20 and 22 abort the process when this allocation fails.
pub fn filled_buffer(env: &Env, len: usize, fill: impl FnOnce(&mut Uninit<'_>) -> Result<(), Failure>) -> Result<Js, Failure> {
  if !RESULTS_IN_PLACE {
    let mut bytes = try_vec(len)?;
    bytes.resize(len, 0);
    let mut output = Uninit { data: NonNull::from(&mut bytes[..]).cast(), capacity: len, filled: 0, _memory: PhantomData };
    fill(&mut output)?;
    let filled = output.filled();
    bytes.truncate(filled);
    return result_bytes(env, bytes);
  }
  let mut data = ptr::null_mut();
  let mut value = ptr::null_mut();
  // SAFETY: on the JavaScript thread of `env`; allocates a Buffer, runs no JavaScript.
  let status = unsafe { sys::napi_create_buffer(env.raw(), len, &mut data, &mut value) };
  if status != sys::Status::napi_ok {
    return Err(Failure::OutOfMemory { bytes: len });
  }
  let mut output = Uninit {
    data: NonNull::new(data.cast()).unwrap_or(NonNull::dangling()),
    capacity: if data.is_null() { 0 } else { len },
    filled: 0,
    _memory: PhantomData,
  };
  // `output` is the new Buffer's memory: no JavaScript has seen `value` yet, and none runs
  // before `fill` returns (the codecs call none), so nothing else can touch it meanwhile.
  fill(&mut output)?;
  Ok(Js(value))
}

/// An argument that is a `Uint8Array` or an instance of one of three classes, told apart without
/// running JavaScript: by its typed-array layout, then by the classes' type tags (under WASI, by
/// the class recorded when the object was wrapped), as napi-rs checks a class argument of its own.
/// Not napi-rs's `Either`, which tells classes apart with `napi_instanceof`: that runs a class's
/// `Symbol.hasInstance`, and code that reached the binding's classes could define one that
/// shrinks or frees another argument while the call holds it.
pub enum ViewOr<'a, A, B, C> {
  View(&'a [u8]),
  First(&'a A),
  Second(&'a B),
  Third(&'a C),
}

impl<A, B, C> FromNapiValue for ViewOr<'_, A, B, C>
where
  A: FromNapiRef + TypeName + 'static,
  B: FromNapiRef + TypeName + 'static,
  C: FromNapiRef + TypeName + 'static,
{
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    // SAFETY: napi-rs calls this on the JavaScript thread, for an argument of the call it is
    // converting, in that call's borrow scope (where a class conversion records its borrow). None
    // of these conversions runs JavaScript, and one that fails records nothing.
    unsafe {
      if let Ok(view) = <&[u8]>::from_napi_value(env, value) {
        return Ok(ViewOr::View(view));
      }
      if let Ok(first) = A::from_napi_ref(env, value) {
        return Ok(ViewOr::First(first));
      }
      if let Ok(second) = B::from_napi_ref(env, value) {
        return Ok(ViewOr::Second(second));
      }
      if let Ok(third) = C::from_napi_ref(env, value) {
        return Ok(ViewOr::Third(third));
      }
    }
    let expected = format!("expected a Uint8Array, a {}, a {} or a {}", A::type_name(), B::type_name(), C::type_name());
    Err(napi::Error::new(napi::Status::InvalidArg, expected))
  }
}

/// A Buffer that `main.js` hands native code to write a result into: the slab it keeps for
/// small results (written past the offset it gives, then carved into a view), or the Buffer a
/// large result is moved into. Read as raw memory, not a Rust slice: other arguments (the input)
/// may be views of the same `ArrayBuffer`.
pub struct Target {
  data: *mut u8,
  len: usize,
}

impl FromNapiValue for Target {
  unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
    let (mut kind, mut len, mut data) = (0, 0, ptr::null_mut());
    let (buffer, offset) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: napi-rs calls this on the JavaScript thread; reading the layout runs no JavaScript.
    let status = unsafe { sys::napi_get_typedarray_info(env, value, &mut kind, &mut len, &mut data, buffer, offset) };
    if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
      return Err(napi::Error::new(napi::Status::InvalidArg, "the target must be a Buffer"));
    }
    Ok(Self { data: data.cast(), len: if data.is_null() { 0 } else { len } })
  }
}

impl TypeName for Target {
  fn type_name() -> &'static str {
    "Buffer"
  }
  fn value_type() -> ValueType {
    ValueType::Object
  }
}

impl ValidateNapiValue for Target {}

impl Target {
  /// `len` bytes of the target from `offset` on, to write a result into, if it has that much
  /// room there and it does not overlap `input`.
  ///
  /// The memory stays valid until the native call that received the target returns (`main.js`
  /// holds it for the call), as long as no JavaScript runs meanwhile: the callers write it and
  /// return, running none.
  pub fn room(&mut self, offset: u32, len: usize, input: &[u8]) -> Option<Uninit<'_>> {
    if self.data.is_null() {
      return None;
    }
    let offset = offset as usize;
    if len > self.len.checked_sub(offset)? {
      return None;
    }
    // In bounds: `offset <= self.len`, and `self.data` points at the target's `self.len` bytes.
    let start = self.data.wrapping_add(offset);
    #[cfg(target_family = "wasm")]
    if !super::staging::contains(start as usize, len) {
      return None;
    }
    let (input_start, input_end) = (input.as_ptr() as usize, input.as_ptr() as usize + input.len());
    if (start as usize) < input_end && input_start < start as usize + len {
      return None;
    }
    Some(Uninit { data: NonNull::new(start)?, capacity: len, filled: 0, _memory: PhantomData })
  }
}

// ---------------------------------------------------------------------------------------------
// Where a one-shot call's small result may go

/// Where a small result may be written: a target, from an offset on. Or, with the offset
/// [`OWN_BUFFER`], a Buffer that `lib/results.js` made for one result (`decodeTarget`): written
/// only by a result of exactly its length, never shared.
pub struct Slot {
  target: Target,
  offset: u32,
  /// Where in the target the result's length goes (a staging area's, see `staging.rs`), rather
  /// than returned as a number.
  length_at: Option<u32>,
}

/// The offset that marks a slot as a Buffer made for one result (`capabilities.ownBuffer`).
pub const OWN_BUFFER: u32 = u32::MAX;

impl Slot {
  /// The slot `offset` bytes into `target`.
  pub fn new(target: Target, offset: u32) -> Self {
    Self { target, offset, length_at: None }
  }

  /// What the call returns once a result of `len` bytes is in the slot: their length, or, for a
  /// staged call, no value (undefined, made without a Node-API call) with the length written
  /// into the area as an `f64`.
  pub fn filled(&mut self, env: &Env, len: usize, input: &[u8]) -> Result<Js, Failure> {
    let length_at = self.length_at.and_then(|at| self.target.room(at, std::mem::size_of::<f64>(), input));
    match length_at {
      Some(mut room) => {
        room.write(&(len as f64).to_le_bytes());
        Ok(Js(ptr::null_mut()))
      }
      None => Js::number(env, len as u32),
    }
  }

  /// `len` bytes of the slot, if it has that much room and it does not overlap `input` (see
  /// [`Target::room`]); never of a Buffer made for one result.
  pub fn room(&mut self, len: usize, input: &[u8]) -> Option<Uninit<'_>> {
    if self.offset == OWN_BUFFER {
      return None;
    }
    self.target.room(self.offset, len, input)
  }

  /// The whole target, if it is a Buffer made for one result and that result is `len` bytes.
  pub fn own(&mut self, len: usize, input: &[u8]) -> Option<Uninit<'_>> {
    if self.offset != OWN_BUFFER || self.target.len != len {
      return None;
    }
    self.target.room(0, len, input)
  }
}

// ---------------------------------------------------------------------------------------------
// Staging areas (the WebAssembly build)

/// `caller`'s staged call (see `staging::call`), and where its small result goes: the area,
/// from the first 8-byte boundary past the input, its length reported in the area too. Valid
/// until the call returns: an area is replaced only by its owner's `staging_area` call. `None`
/// when the caller has no call that fits its area, or another layout than the one it names.
#[cfg(target_family = "wasm")]
pub fn staged<'a>(caller: super::staging::Caller) -> Option<(super::staging::Call<'a>, Slot)> {
  let call = super::staging::call(caller)?;
  let result_at = u32::try_from(call.result_at).ok()?;
  let target = Target { data: call.area, len: call.capacity };
  Some((call, Slot { target, offset: result_at, length_at: Some(super::staging::RESULT_LENGTH_AT) }))
}

/// A view of the word that names the owner of each staged call (the WebAssembly build).
#[cfg(target_family = "wasm")]
pub fn staging_caller(env: &Env) -> Result<Js, Failure> {
  super::staging::caller_view(env).map(Js)
}

/// A view of the words the JavaScript thread waits on for the WebAssembly build's threads.
#[cfg(target_family = "wasm")]
pub fn workers_signal(env: &Env) -> Result<Js, Failure> {
  super::staging::signal_view(env).map(Js)
}

/// Settles the WebAssembly build's finished work: whether work is still in flight.
#[cfg(target_family = "wasm")]
pub fn settle_workers(env: &Env) -> bool {
  super::workers::Workers::settle_signalled(env)
}

/// Frees `owner`'s staging area and makes a new one of `len` bytes: a view of it (the
/// WebAssembly build).
#[cfg(target_family = "wasm")]
pub fn staging_area(env: &Env, owner: u32, len: usize) -> Result<Js, Failure> {
  super::staging::replace(env, owner, len).map(Js)
}
