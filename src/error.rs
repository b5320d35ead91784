//! Every failure the library reports, and the one place where it becomes a JavaScript error.

use std::ptr;

use napi::sys;
use zstd::zstd_safe::zstd_sys::{self, ZSTD_ErrorCode};

/// Why a call failed. Built anywhere (including libuv threads); turned into a JS value only on
/// the JavaScript thread, by [`Failure::to_js`].
#[derive(Debug)]
pub enum Failure {
  /// libzstd returned an error code.
  Zstd(usize),
  /// The input ended before the end of a frame (or held no frame at all).
  Truncated,
  /// The decompressed data is, or declares itself, larger than `maxOutputLength`.
  OutputTooLarge { limit: usize, declared: Option<u64> },
  /// A frame asks for a window larger than `windowLogMax` allows.
  WindowTooLarge { window: u64, window_log_max: u32 },
  /// An allocation of `bytes` failed; reported instead of aborting the process.
  OutOfMemory { bytes: usize },
  /// libzstd could not allocate a new context.
  NoContext,
  /// A wrong type for an argument or option (`TypeError`).
  InvalidType { name: &'static str, expected: &'static str, received: String },
  /// A value of the right type outside the accepted range (`RangeError`).
  OutOfRange { name: &'static str, expected: String, received: String },
  /// The call's `AbortSignal` fired before the work could run.
  Aborted,
  /// A stream session that ended (or failed) was given more.
  StreamEnded,
  /// The build lacks a capability the call asked for.
  Unsupported(&'static str),
  /// Dictionary bytes that libzstd cannot use.
  BadDictionary(&'static str),
  /// Training found too little to learn from.
  TrainingFailed { samples: usize, bytes: usize, size: usize },
  /// A frame needs another dictionary than the one given (or one, and none was given).
  DictionaryMismatch { needed: u32, given: Option<u32> },
  /// A Node-API call failed: the environment is unusable (for example, shutting down).
  Napi(&'static str),
  /// A bug: the work panicked. The panic is caught so that it never crosses into Node.
  Panicked,
}

enum ErrorClass {
  Error,
  TypeError,
  RangeError,
}

impl Failure {
  fn class_code_message(&self) -> (ErrorClass, String, String) {
    match self {
      Failure::Zstd(code) => {
        let name = zstd_error_code_name(*code);
        let hint = if name == "ZSTD_error_frameParameter_windowTooLarge" { " (raise the windowLogMax option to decode it)" } else { "" };
        (ErrorClass::Error, name.to_owned(), format!("zstd: {}{hint}", zstd::zstd_safe::get_error_name(*code)))
      }
      Failure::WindowTooLarge { window, window_log_max } => (
        ErrorClass::Error,
        "ZSTD_error_frameParameter_windowTooLarge".to_owned(),
        format!(
          "zstd: a frame needs a window of {window} bytes, more than windowLogMax ({window_log_max}, {} bytes) allows; raise the windowLogMax option to decode it",
          1u64 << window_log_max
        ),
      ),
      Failure::Truncated => (
        ErrorClass::Error,
        zstd_error_code_name_of(ZSTD_ErrorCode::ZSTD_error_srcSize_wrong).to_owned(),
        "zstd: input ended in the middle of a frame (truncated, or empty)".to_owned(),
      ),
      Failure::OutputTooLarge { limit, declared: Some(declared) } => (
        ErrorClass::RangeError,
        "ERR_BUFFER_TOO_LARGE".to_owned(),
        format!("zstd frame declares {declared} bytes of output, more than maxOutputLength ({limit} bytes)"),
      ),
      Failure::OutputTooLarge { limit, declared: None } => (
        ErrorClass::RangeError,
        "ERR_BUFFER_TOO_LARGE".to_owned(),
        format!("decompressed data exceeds maxOutputLength ({limit} bytes)"),
      ),
      Failure::OutOfMemory { bytes } => (
        ErrorClass::RangeError,
        "ERR_MEMORY_ALLOCATION_FAILED".to_owned(),
        format!("could not allocate {bytes} bytes"),
      ),
      Failure::NoContext => (
        ErrorClass::RangeError,
        "ERR_MEMORY_ALLOCATION_FAILED".to_owned(),
        "could not allocate a zstd context".to_owned(),
      ),
      Failure::InvalidType { name, expected, received } => (
        ErrorClass::TypeError,
        "ERR_INVALID_ARG_TYPE".to_owned(),
        format!("The \"{name}\" {} must be {expected}. Received {received}", if name.contains('.') { "property" } else { "argument" }),
      ),
      Failure::OutOfRange { name, expected, received } => (
        ErrorClass::RangeError,
        "ERR_OUT_OF_RANGE".to_owned(),
        format!("The value of \"{name}\" is out of range. It must be {expected}. Received {received}"),
      ),
      Failure::BadDictionary(why) => (
        ErrorClass::Error,
        "ZSTD_error_dictionary_corrupted".to_owned(),
        format!("zstd: not a usable dictionary: {why}"),
      ),
      Failure::TrainingFailed { samples, bytes, size } => (
        ErrorClass::Error,
        "ZSTD_error_dictionaryCreation_failed".to_owned(),
        format!(
          "zstd: cannot train a {size}-byte dictionary on {samples} samples ({bytes} bytes): give more samples \
           (thousands are typical, about 100 times the dictionary size in all) or ask for a smaller size"
        ),
      ),
      Failure::DictionaryMismatch { needed, given } => (
        ErrorClass::Error,
        "ZSTD_error_dictionary_wrong".to_owned(),
        match given {
          Some(given) => format!("zstd: the frame needs dictionary {needed}, but dictionary {given} was given"),
          None => format!("zstd: the frame needs dictionary {needed}; pass it as the dictionary option"),
        },
      ),
      Failure::StreamEnded => (
        ErrorClass::Error,
        "ERR_STREAM_WRITE_AFTER_END".to_owned(),
        "zstd-pool: this stream has ended or failed, and takes no more input".to_owned(),
      ),
      Failure::Unsupported(what) => (ErrorClass::Error, "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM".to_owned(), format!("zstd-pool: {what}")),
      Failure::Aborted => (
        ErrorClass::Error,
        "ABORT_ERR".to_owned(),
        "The operation was aborted".to_owned(),
      ),
      Failure::Panicked => (
        ErrorClass::Error,
        "ERR_INTERNAL_ASSERTION".to_owned(),
        "zstd-pool: internal error (a panic was caught); please report it".to_owned(),
      ),
      Failure::Napi(what) => (
        ErrorClass::Error,
        "ERR_NAPI".to_owned(),
        format!("Node-API call failed: {what}"),
      ),
    }
  }

  /// The JavaScript error object for this failure: an `Error`, `TypeError` or `RangeError` whose
  /// `code` names the cause (libzstd's own error name for zstd failures, Node's codes otherwise).
  ///
  /// # Safety
  /// Must run on the JavaScript thread that owns `env`.
  pub unsafe fn to_js(&self, env: sys::napi_env) -> sys::napi_value {
    let (class, code, message) = self.class_code_message();
    let mut error = ptr::null_mut();
    unsafe {
      let code = string(env, &code);
      let message = string(env, &message);
      let create = match class {
        ErrorClass::Error => sys::napi_create_error,
        ErrorClass::TypeError => sys::napi_create_type_error,
        ErrorClass::RangeError => sys::napi_create_range_error,
      };
      create(env, code, message, &mut error);
      if matches!(self, Failure::Aborted) && !error.is_null() {
        sys::napi_set_named_property(env, error, c"name".as_ptr(), string(env, "AbortError"));
      }
    }
    error
  }

  /// Throws this failure's JavaScript error (with its class and `code`), and returns the
  /// `napi::Error` that tells napi-rs an exception is pending, so that it throws nothing else.
  ///
  /// # Safety
  /// Must run on the JavaScript thread that owns `env`.
  pub unsafe fn into_napi(self, env: sys::napi_env) -> napi::Error {
    let message = self.class_code_message().2;
    let value = unsafe { self.to_js(env) };
    if !value.is_null() && unsafe { sys::napi_throw(env, value) } == sys::Status::napi_ok {
      return napi::Error::new(napi::Status::PendingException, message);
    }
    napi::Error::from_reason(message)
  }
}

unsafe fn string(env: sys::napi_env, text: &str) -> sys::napi_value {
  let mut value = ptr::null_mut();
  unsafe { sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut value) };
  value
}

/// libzstd's symbolic name for an error code (`ZSTD_error_corruption_detected`), as used by
/// `node:zlib` in the `code` of its zstd errors.
pub fn zstd_error_code_name(code: usize) -> &'static str {
  zstd_error_code_name_of(unsafe { zstd_sys::ZSTD_getErrorCode(code) })
}

fn zstd_error_code_name_of(code: ZSTD_ErrorCode) -> &'static str {
  macro_rules! names {
    ($($variant:ident),* $(,)?) => {
      match code {
        $(ZSTD_ErrorCode::$variant => stringify!($variant),)*
        #[allow(unreachable_patterns)]
        _ => "ZSTD_error_GENERIC",
      }
    };
  }
  names!(
    ZSTD_error_no_error,
    ZSTD_error_GENERIC,
    ZSTD_error_prefix_unknown,
    ZSTD_error_version_unsupported,
    ZSTD_error_frameParameter_unsupported,
    ZSTD_error_frameParameter_windowTooLarge,
    ZSTD_error_corruption_detected,
    ZSTD_error_checksum_wrong,
    ZSTD_error_literals_headerWrong,
    ZSTD_error_dictionary_corrupted,
    ZSTD_error_dictionary_wrong,
    ZSTD_error_dictionaryCreation_failed,
    ZSTD_error_parameter_unsupported,
    ZSTD_error_parameter_combination_unsupported,
    ZSTD_error_parameter_outOfBound,
    ZSTD_error_tableLog_tooLarge,
    ZSTD_error_maxSymbolValue_tooLarge,
    ZSTD_error_maxSymbolValue_tooSmall,
    ZSTD_error_cannotProduce_uncompressedBlock,
    ZSTD_error_stabilityCondition_notRespected,
    ZSTD_error_stage_wrong,
    ZSTD_error_init_missing,
    ZSTD_error_memory_allocation,
    ZSTD_error_workSpace_tooSmall,
    ZSTD_error_dstSize_tooSmall,
    ZSTD_error_srcSize_wrong,
    ZSTD_error_dstBuffer_null,
    ZSTD_error_noForwardProgress_destFull,
    ZSTD_error_noForwardProgress_inputEmpty,
    ZSTD_error_frameIndex_tooLarge,
    ZSTD_error_seekableIO,
    ZSTD_error_dstBuffer_wrong,
    ZSTD_error_srcBuffer_wrong,
    ZSTD_error_sequenceProducer_failed,
    ZSTD_error_externalSequences_invalid,
    ZSTD_error_maxCode,
  )
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn zstd_codes_have_their_libzstd_names() {
    let mut dctx = zstd::zstd_safe::DCtx::create();
    let mut out = vec![0u8; 16];
    let code = dctx.decompress(&mut out[..], b"definitely not zstd").unwrap_err();
    assert_eq!(zstd_error_code_name(code), "ZSTD_error_prefix_unknown");
  }
}
