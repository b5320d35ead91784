//! Allocations that fail with a coded [`Failure`] instead of aborting the process.

use crate::error::Failure;

/// A vector with room for exactly `len` bytes, or a coded failure instead of an abort.
pub fn try_vec(len: usize) -> Result<Vec<u8>, Failure> {
  let mut bytes = Vec::new();
  bytes.try_reserve_exact(len).map_err(|_| Failure::OutOfMemory { bytes: len })?;
  Ok(bytes)
}

/// A copy of an input, for work that runs after the call returns.
pub fn owned(input: &[u8]) -> Result<Vec<u8>, Failure> {
  let mut copy = try_vec(input.len())?;
  copy.extend_from_slice(input);
  Ok(copy)
}
