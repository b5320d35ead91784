//! Exports registered by hand, for the calls made most: `compress` and `decompress` with no
//! dictionary, prefix or signal. napi-derive wraps every `#[napi]` function that takes arguments
//! in a borrow scope (a thread-local scope, a barrier, and a global registry for each class
//! instance borrowed), which guards class instances a call borrows against a re-entrant `&mut`
//! use. These calls borrow none, and without the scope they are 3-9% faster at 1 KiB (Node 26,
//! 2-core VM, 2026-12-02; see docs/performance.md). Their arguments are read with napi-rs's own
//! conversions, as a `#[napi]` function's are.

use napi::bindgen_prelude::{CallbackInfo, FromNapiValue, JsObjectValue, Object};
use napi::{sys, Env};

use super::js::{exception_pending, Js};

/// An export registered by hand: its name, and what it does with its arguments (at most
/// `MAX_ARGS`; an error is thrown, unless one is pending already).
pub trait Plain {
  const NAME: &'static str;
  /// Whether the call reads its arguments: one that takes none (the staged calls, whose owner
  /// writes everything into its staging area) makes no Node-API call to read them.
  const TAKES_ARGUMENTS: bool = true;
  fn call(env: &Env, args: &Args) -> napi::Result<Js>;
}

/// The arguments of a call, as JavaScript passed them (missing ones read as `undefined`).
pub struct Args {
  env: sys::napi_env,
  values: [sys::napi_value; MAX_ARGS],
}

pub const MAX_ARGS: usize = 8;

impl Args {
  /// Argument `index`, converted as a `#[napi]` function converts an argument of type `T`: a
  /// number, a boolean, a byte view or a `Target`, never a class instance (napi-rs tracks those
  /// borrows in the scope these calls do without). A borrowed `T` (a byte slice) stays valid
  /// until the call returns, as long as no JavaScript runs meanwhile: the rule every export here
  /// keeps (see `mod.rs`).
  pub fn get<T: FromNapiValue>(&self, index: usize) -> napi::Result<T> {
    let value = *self.values.get(index).ok_or_else(|| napi::Error::from_reason("an argument past MAX_ARGS"))?;
    if value.is_null() {
      return Err(napi::Error::from_reason("an argument of a call that reads none"));
    }
    // SAFETY: on the JavaScript thread of `env`, during the call whose argument `value` is (a
    // handle valid until the call returns); converting an argument runs no JavaScript.
    unsafe { T::from_napi_value(self.env, value) }
  }
}

/// Adds `P` to `exports` as a function named `P::NAME`.
pub fn register<P: Plain>(env: &Env, exports: &mut Object) -> napi::Result<()> {
  let function = env.create_function::<(), ()>(P::NAME, callback::<P>)?;
  exports.set_named_property(P::NAME, function)
}

/// What Node-API calls: reads the arguments, runs `P::call`, and throws its error.
unsafe extern "C" fn callback<P: Plain>(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  let wrapped = Env::from_raw(env);
  // napi-rs's own reading of a call's arguments, as every `#[napi]` function's starts.
  let result = if P::TAKES_ARGUMENTS {
    CallbackInfo::<MAX_ARGS>::new(env, info, None, false).and_then(|info| P::call(&wrapped, &Args { env, values: info.args }))
  } else {
    // No handles: `Args::get` refuses to read one.
    P::call(&wrapped, &Args { env, values: [std::ptr::null_mut(); MAX_ARGS] })
  };
  match result {
    Ok(value) => value.raw(),
    Err(error) => {
      if !exception_pending(&wrapped) {
        let _ = wrapped.throw_error(&error.reason, None);
      }
      std::ptr::null_mut()
    }
  }
}
