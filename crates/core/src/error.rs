//! Every failure the native side reports, and what it looks like to JavaScript: the error class,
//! the `code` and the message. Plain Rust: `node.rs` makes the JavaScript error from this.
//!
//! Wrong argument types and out-of-range values never get here: the package entry (`main.js`)
//! checks every argument before it calls native code.

use zstd::zstd_safe::{self, zstd_sys::ZSTD_ErrorCode};

/// Why a call failed. Built anywhere (libuv threads included); turned into a JavaScript value
/// only on the JavaScript thread.
#[derive(Debug)]
pub enum Failure {
  /// libzstd returned an error code.
  Zstd(usize),
  /// The input ended before the end of a frame (or held no frame at all).
  Truncated,
  /// The decompressed data is, or declares itself, larger than `maxOutputLength`.
  OutputTooLarge { limit: usize, declared: Option<u64> },
  /// A packed batch's group would hold more than the largest Buffer, `limit` bytes.
  PackedTooLarge { limit: usize },
  /// A frame asks for a window larger than `windowLogMax` allows.
  WindowTooLarge { window: u64, window_log_max: u32 },
  /// An allocation of `bytes` failed; reported instead of aborting the process.
  OutOfMemory { bytes: usize },
  /// libzstd could not allocate a new context.
  NoContext,
  /// The work was cancelled (its `AbortSignal` fired) before it ran.
  Aborted,
  /// A stream session that ended (or failed) was given more.
  StreamEnded,
  /// A stream session was given a step while its previous step was still running.
  StepInProgress,
  /// The build lacks a capability the call asked for.
  Unsupported(&'static str),
  /// An argument native code cannot read as what it stands for (the package's JavaScript never
  /// passes one; code calling the binding directly can).
  InvalidArgument(&'static str),
  /// Dictionary bytes that libzstd cannot use.
  BadDictionary(&'static str),
  /// Training found too little to learn from.
  TrainingFailed { samples: usize, bytes: usize, size: usize },
  /// A call was given a dictionary whose memory was released (`Dictionary`'s dispose).
  DictionaryReleased,
  /// A frame needs another dictionary than the one given (or one, and none was given).
  DictionaryMismatch { needed: u32, given: Option<u32> },
  /// A frame needs a dictionary that none of a set of them (`dictionaries`) is: their IDs.
  DictionaryNotInSet { needed: u32, given: Vec<u32> },
  /// libzstd's error `code` (a wrong checksum, corrupt data) while decoding against a prefix:
  /// most likely the prefix is not the reference the frame was made against, since a patch
  /// decoded against other bytes is otherwise well formed.
  AgainstPrefix(usize),
  /// A call was given a prefix whose memory was released (`Prefix`'s dispose).
  PrefixReleased,
  /// A Node-API call failed: the environment is unusable (for example, shutting down).
  Napi(&'static str),
  /// A seekable file whose seek table is missing, malformed, or wrong about its frames.
  Seekable(SeekableProblem),
  /// A bug: the work panicked. The panic is caught so that it never crosses into Node.
  Panicked,
}

/// What is wrong with a seekable file (crate::seekable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekableProblem {
  /// The file does not end with a seek table's footer.
  NoTable,
  /// The table is malformed, or its sizes do not fit the file: why.
  Corrupt(&'static str),
  /// A frame's content does not match the checksum the table lists for it.
  ChecksumWrong { frame: u64 },
}

/// The JavaScript class of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
  Error,
  RangeError,
  TypeError,
}

/// How a failure reads in JavaScript.
#[derive(Debug)]
pub struct ErrorShape {
  pub class: ErrorClass,
  /// The error's `code`: libzstd's own error name for zstd failures (as `node:zlib` names
  /// them), Node's codes otherwise.
  pub code: &'static str,
  pub message: String,
}

impl Failure {
  pub fn shape(&self) -> ErrorShape {
    use ErrorClass::{Error, RangeError, TypeError};
    let (class, code, message) = match self {
      Failure::Zstd(code) => {
        let name = zstd_error_code_name(*code);
        let hint =
          if name == "ZSTD_error_frameParameter_windowTooLarge" { " (raise the windowLogMax option to decode it)" } else { "" };
        (Error, name, format!("zstd: {}{hint}", zstd_safe::get_error_name(*code)))
      }
      Failure::WindowTooLarge { window, window_log_max } => (
        Error,
        "ZSTD_error_frameParameter_windowTooLarge",
        format!(
          "zstd: a frame needs a window of {window} bytes, more than windowLogMax ({window_log_max}, {} bytes) allows; \
           raise the windowLogMax option to decode it",
          1u64 << window_log_max
        ),
      ),
      Failure::Truncated => {
        (Error, "ZSTD_error_srcSize_wrong", "zstd: input ended in the middle of a frame (truncated, or empty)".to_owned())
      }
      Failure::OutputTooLarge { limit, declared: Some(declared) } => (
        RangeError,
        "ERR_BUFFER_TOO_LARGE",
        format!("zstd frame declares {declared} bytes of output, more than maxOutputLength ({limit} bytes)"),
      ),
      Failure::OutputTooLarge { limit, declared: None } => {
        (RangeError, "ERR_BUFFER_TOO_LARGE", format!("decompressed data exceeds maxOutputLength ({limit} bytes)"))
      }
      Failure::PackedTooLarge { limit } => (
        RangeError,
        "ERR_BUFFER_TOO_LARGE",
        format!(
          "the results of a packed batch's group would exceed the largest Buffer ({limit} bytes): \
           compressMany / decompressMany give each result a Buffer of its own"
        ),
      ),
      Failure::OutOfMemory { bytes } => (RangeError, "ERR_MEMORY_ALLOCATION_FAILED", format!("could not allocate {bytes} bytes")),
      Failure::NoContext => (RangeError, "ERR_MEMORY_ALLOCATION_FAILED", "could not allocate a zstd context".to_owned()),
      Failure::BadDictionary(why) => (Error, "ZSTD_error_dictionary_corrupted", format!("zstd: not a usable dictionary: {why}")),
      Failure::TrainingFailed { samples, bytes, size } => (
        Error,
        "ZSTD_error_dictionaryCreation_failed",
        format!(
          "zstd: cannot train a {size}-byte dictionary on {samples} samples ({bytes} bytes): give more samples \
           (thousands are typical, about 100 times the dictionary size in all) or ask for a smaller size"
        ),
      ),
      Failure::DictionaryMismatch { needed, given } => (
        Error,
        "ZSTD_error_dictionary_wrong",
        match given {
          Some(given) => format!("zstd: the frame needs dictionary {needed}, but dictionary {given} was given"),
          None => format!("zstd: the frame needs dictionary {needed}; pass it as the dictionary option"),
        },
      ),
      Failure::DictionaryNotInSet { needed, given } => {
        (Error, "ZSTD_error_dictionary_wrong", format!("zstd: the frame needs dictionary {needed}, {}", none_of(given)))
      }
      Failure::AgainstPrefix(code) => (
        Error,
        zstd_error_code_name(*code),
        format!(
          "zstd: {}: the prefix is likely not the reference this frame was made against \
           (decompress with the same bytes it was compressed against)",
          zstd_safe::get_error_name(*code)
        ),
      ),
      Failure::PrefixReleased => {
        (Error, "ERR_INVALID_STATE", "zstd-pool: this Prefix was disposed: its memory is gone".to_owned())
      }
      Failure::DictionaryReleased => {
        (Error, "ERR_INVALID_STATE", "zstd-pool: this Dictionary was disposed: its memory is gone".to_owned())
      }
      Failure::StreamEnded => {
        (Error, "ERR_STREAM_WRITE_AFTER_END", "zstd-pool: this stream has ended or failed, and takes no more input".to_owned())
      }
      Failure::StepInProgress => {
        (Error, "ERR_INVALID_STATE", "zstd-pool: a stream step is still running; wait for it before the next".to_owned())
      }
      Failure::Unsupported(what) => (Error, "ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", format!("zstd-pool: {what}")),
      Failure::InvalidArgument(what) => (TypeError, "ERR_INVALID_ARG_VALUE", format!("zstd-pool: {what}")),
      Failure::Aborted => (Error, "ABORT_ERR", "The operation was aborted".to_owned()),
      Failure::Panicked => {
        (Error, "ERR_INTERNAL_ASSERTION", "zstd-pool: internal error (a panic was caught); please report it".to_owned())
      }
      Failure::Napi(what) => (Error, "ERR_NAPI", format!("Node-API call failed: {what}")),
      Failure::Seekable(SeekableProblem::NoTable) => {
        (Error, "ERR_ZSTD_SEEKABLE_NO_TABLE", "zstd-pool: not a seekable file: it does not end with a seek table".to_owned())
      }
      Failure::Seekable(SeekableProblem::Corrupt(why)) => {
        (Error, "ERR_ZSTD_SEEKABLE_CORRUPT", format!("zstd-pool: the seek table is corrupt: {why}"))
      }
      Failure::Seekable(SeekableProblem::ChecksumWrong { frame }) => (
        Error,
        "ERR_ZSTD_SEEKABLE_CHECKSUM",
        format!("zstd-pool: frame {frame} does not match the checksum its seek table lists"),
      ),
    };
    ErrorShape { class, code, message }
  }
}

/// How an error names the IDs of the dictionaries given when none is the one a frame needs: the
/// first few of them (a set can hold a thousand).
fn none_of(ids: &[u32]) -> String {
  const NAMED: usize = 16;
  let named: Vec<String> = ids.iter().take(NAMED).map(u32::to_string).collect();
  let more = match ids.len().saturating_sub(NAMED) {
    0 => String::new(),
    more => format!(" and {more} more"),
  };
  format!("which none of the dictionaries given has (their IDs: {}{more})", named.join(", "))
}

impl Failure {
  /// This failure, from decoding against `prefix`: a wrong checksum or corrupt data there names
  /// the prefix as the likely cause. An empty prefix is none (it references nothing).
  pub fn against_prefix(self, prefix: Option<&[u8]>) -> Self {
    let suspect = |code| {
      zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_checksum_wrong)
        || zstd_safe::is_error_kind(code, ZSTD_ErrorCode::ZSTD_error_corruption_detected)
    };
    match self {
      Failure::Zstd(code) if suspect(code) && prefix.is_some_and(|prefix| !prefix.is_empty()) => Failure::AgainstPrefix(code),
      failure => failure,
    }
  }
}

/// libzstd's symbolic name for an error code (`ZSTD_error_corruption_detected`), as used by
/// `node:zlib` in the `code` of its zstd errors.
pub fn zstd_error_code_name(code: usize) -> &'static str {
  macro_rules! names {
    ($($kind:ident),* $(,)?) => {
      $(if zstd_safe::is_error_kind(code, ZSTD_ErrorCode::$kind) { return stringify!($kind); })*
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
  );
  "ZSTD_error_GENERIC"
}

/// libzstd's error result for `kind`, as its functions return it: the negated code.
pub fn zstd_error(kind: ZSTD_ErrorCode) -> usize {
  (kind as usize).wrapping_neg()
}

/// Runs native work on the calling thread, turning a panic into a [`Failure`] so that it
/// never unwinds into Node.
pub fn guarded<T>(work: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
  std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or(Err(Failure::Panicked))
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn zstd_codes_have_their_libzstd_names() {
    let mut dctx = zstd::zstd_safe::DCtx::create();
    let mut out = [0u8; 16];
    let code = dctx.decompress(&mut out[..], b"definitely not zstd").unwrap_err();
    assert_eq!(zstd_error_code_name(code), "ZSTD_error_prefix_unknown");
    assert_eq!(zstd_error_code_name(zstd_error(ZSTD_ErrorCode::ZSTD_error_checksum_wrong)), "ZSTD_error_checksum_wrong");
  }

  #[test]
  fn a_wrong_checksum_against_a_prefix_names_the_prefix_and_keeps_its_code() {
    let wrong = || Failure::Zstd(zstd_error(ZSTD_ErrorCode::ZSTD_error_checksum_wrong));
    let shape = wrong().against_prefix(Some(b"old version")).shape();
    assert_eq!(shape.code, "ZSTD_error_checksum_wrong");
    assert!(shape.message.contains("the prefix is likely not the reference"), "{}", shape.message);
    // Without a prefix (or with an empty one, which is none), the failure is as it was.
    assert!(matches!(wrong().against_prefix(None), Failure::Zstd(_)));
    assert!(matches!(wrong().against_prefix(Some(b"")), Failure::Zstd(_)));
    assert!(matches!(Failure::Truncated.against_prefix(Some(b"old version")), Failure::Truncated));
  }

  #[test]
  fn every_failure_has_a_code_and_a_message() {
    for failure in [Failure::Truncated, Failure::Aborted, Failure::StepInProgress, Failure::OutOfMemory { bytes: 1 }] {
      let shape = failure.shape();
      assert!(!shape.code.is_empty() && !shape.message.is_empty());
    }
  }
}
