//! Patch-from references: `PreparedPrefix`, which `lib/prefix.js`'s `Prefix` holds, and how a
//! call holds the prefix it is given, as bytes or as a `PreparedPrefix`.
//!
//! A call given a prefix as bytes reads them in place while it runs on this thread, but work
//! queued for the threadpool must own a copy: 2,000 async calls in flight against one 1 MiB
//! reference held 2 GB. A `PreparedPrefix` is that copy, made once and shared by every call and
//! thread that names it.

use std::ops::Deref;
use std::sync::{Arc, Mutex};

use napi::{Env, Result};
use napi_derive::napi;
use zstd_pool_core::error::Failure;
use zstd_pool_core::memory::owned;

use crate::exports::reference::Reference;
use crate::napi::{throw, ViewOr};

/// A reference copied once into native memory for any number of calls on any thread. Its bytes
/// are reported to V8, so that a dropped one is collected as its size warrants, and given back
/// when it is released or collected.
#[napi(custom_finalize)]
pub struct PreparedPrefix {
  /// `None` once released: calls already running hold the bytes by their own `Arc`.
  bytes: Mutex<Option<SharedPrefix>>,
  size: usize,
}

#[napi]
impl PreparedPrefix {
  /// Copies `bytes`.
  #[napi(constructor)]
  pub fn new(env: Env, bytes: &[u8]) -> Result<Self> {
    let copy = owned(bytes).map_err(|failure| throw(&env, failure))?;
    let prefix = Self { size: copy.len(), bytes: Mutex::new(Some(SharedPrefix(Arc::new(copy)))) };
    // Failing to tell V8 leaves only its estimate off: nothing to report to the caller.
    let _ = env.adjust_external_memory(prefix.size as i64);
    Ok(prefix)
  }

  #[napi(getter)]
  pub fn size(&self) -> f64 {
    self.size as f64
  }

  /// Lets go of the native memory now rather than when the object is collected (once the calls
  /// using it, which hold it too, end). Later calls with it fail.
  #[napi]
  pub fn release(&self, env: Env) {
    if self.take().is_some() {
      let _ = env.adjust_external_memory(-(self.size as i64));
    }
  }
}

impl PreparedPrefix {
  fn take(&self) -> Option<SharedPrefix> {
    self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
  }

  fn get(&self) -> Option<SharedPrefix> {
    self.bytes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
  }
}

impl napi::bindgen_prelude::ObjectFinalize for PreparedPrefix {
  fn finalize(self, env: Env) -> Result<()> {
    if self.take().is_some() {
      env.adjust_external_memory(-(self.size as i64))?;
    }
    Ok(())
  }
}

/// A prefix owned by work that outlives the call: shared, never copied again.
#[derive(Clone)]
pub struct SharedPrefix(Arc<Vec<u8>>);

impl Deref for SharedPrefix {
  type Target = [u8];

  fn deref(&self) -> &[u8] {
    &self.0
  }
}

/// A prefix as a call holds it: the caller's bytes, read in place while the call runs on this
/// thread, or a `PreparedPrefix`'s.
pub enum HeldPrefix<'a> {
  View(&'a [u8]),
  Shared(SharedPrefix),
}

impl HeldPrefix<'_> {
  /// The prefix of a call's reference, held for the call; a released `PreparedPrefix` fails it.
  pub fn of<'a>(reference: &Option<Reference<'a>>) -> std::result::Result<Option<HeldPrefix<'a>>, Failure> {
    match reference {
      Some(ViewOr::View(bytes)) => Ok(Some(HeldPrefix::View(bytes))),
      Some(ViewOr::Second(prepared)) => {
        prepared.get().map(|shared| Some(HeldPrefix::Shared(shared))).ok_or(Failure::PrefixReleased)
      }
      _ => Ok(None),
    }
  }

  pub fn bytes(&self) -> &[u8] {
    match self {
      HeldPrefix::View(bytes) => bytes,
      HeldPrefix::Shared(shared) => shared,
    }
  }

  /// The prefix for work that outlives the call: a `PreparedPrefix`'s bytes as they are, a view
  /// copied (the caller may change or free its memory once the call returns).
  pub fn shared(self) -> std::result::Result<SharedPrefix, Failure> {
    match self {
      HeldPrefix::View(bytes) => Ok(SharedPrefix(Arc::new(owned(bytes)?))),
      HeldPrefix::Shared(shared) => Ok(shared),
    }
  }
}
