//! The check of each frame that libzstd's streaming decoder goes through (see [`FrameCheck`]).

use zstd::zstd_safe;

use super::corruption_code;
use super::plan::frame_header;
use crate::error::Failure;

/// Checks each frame as libzstd's streaming decoder goes through it, where that decoder is more
/// lenient than its one-call decoder (and the format), so that how an input is cut into chunks
/// never changes what it decodes to:
/// - a frame must decode to exactly the size its header declares: the streaming decoder does
///   not check that when a frame's last block is empty;
/// - a compressed block must not be empty: the streaming decoder takes one as an empty block
///   when the block's header and what follows arrive in different calls.
///
/// It is told, call by call, what each `ZSTD_decompressStream` consumed and produced, and the
/// hint it returned (0 at the end of a frame); one call never goes past the end of a frame, so
/// each frame's first bytes are its header.
#[derive(Debug, Default)]
pub struct FrameCheck {
  /// The current frame's first bytes, as many as a frame header can take.
  header: Vec<u8>,
  produced: u64,
  in_frame: bool,
  walk: Walk,
}

/// Where a frame's bytes have got to, block by block.
#[derive(Debug, Default, Clone, Copy)]
enum Walk {
  /// In the frame header (its bytes go to `FrameCheck::header`).
  #[default]
  Header,
  /// In a block header: `have` of its three bytes so far.
  BlockHeader { bytes: [u8; 3], have: usize },
  /// In a block's content, or in a skippable frame's, or in the checksum: `left` bytes to go.
  Skip { left: u64, then: Then },
  /// Past what this check knows (an unknown magic number, a reserved block type): libzstd
  /// reports those itself.
  Off,
}

/// What comes after the bytes a `Walk::Skip` goes over.
#[derive(Debug, Clone, Copy)]
enum Then {
  Block,
  Checksum,
  EndOfFrame,
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;

impl FrameCheck {
  /// Whether some of a frame has been seen and not its end: false at a frame boundary.
  pub fn in_frame(&self) -> bool {
    self.in_frame
  }

  pub fn observe(&mut self, consumed: &[u8], produced: usize, hint: usize) -> Result<(), Failure> {
    if consumed.is_empty() && produced == 0 {
      // A call that took and gave nothing says nothing about the frame.
      return Ok(());
    }
    if !self.in_frame {
      self.header.clear();
      self.produced = 0;
      self.in_frame = true;
      self.walk = Walk::Header;
    }
    self.walk(consumed)?;
    self.produced += produced as u64;
    if hint == 0 {
      self.in_frame = false;
      let declared =
        frame_header(&self.header).filter(|header| header.frameType == zstd_safe::zstd_sys::ZSTD_FrameType_e::ZSTD_frame);
      let declared = declared
        .map(|header| header.frameContentSize)
        .filter(|&size| size != zstd_safe::zstd_sys::ZSTD_CONTENTSIZE_UNKNOWN as u64);
      if declared.is_some_and(|declared| declared != self.produced) {
        return Err(Failure::Zstd(corruption_code()));
      }
    }
    Ok(())
  }

  /// The size of the current frame's header, once enough of it has come to tell.
  fn header_size(&self) -> Option<Result<usize, ()>> {
    let magic = u32::from_le_bytes(self.header.get(..4)?.try_into().ok()?);
    if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
      return Some(Ok(8));
    }
    if magic != ZSTD_MAGIC {
      return Some(Err(()));
    }
    let descriptor = *self.header.get(4)?;
    let single_segment = descriptor & 0x20 != 0;
    let dictionary_id = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size = [usize::from(single_segment), 2, 4, 8][usize::from(descriptor >> 6)];
    Some(Ok(5 + usize::from(!single_segment) + dictionary_id + content_size))
  }

  fn walk(&mut self, mut bytes: &[u8]) -> Result<(), Failure> {
    while !bytes.is_empty() {
      match self.walk {
        Walk::Off => return Ok(()),
        Walk::Header => {
          let target = match self.header_size() {
            Some(Err(())) => {
              self.walk = Walk::Off;
              continue;
            }
            Some(Ok(size)) => size,
            // Not enough to tell yet: the magic number and the descriptor.
            None => 5,
          };
          let take = target.saturating_sub(self.header.len()).min(bytes.len());
          self.header.extend_from_slice(&bytes[..take]);
          bytes = &bytes[take..];
          if self.header_size() == Some(Ok(self.header.len())) {
            let magic = u32::from_le_bytes([self.header[0], self.header[1], self.header[2], self.header[3]]);
            self.walk = if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
              let left = u32::from_le_bytes([self.header[4], self.header[5], self.header[6], self.header[7]]);
              Walk::Skip { left: u64::from(left), then: Then::EndOfFrame }
            } else {
              Walk::BlockHeader { bytes: [0; 3], have: 0 }
            };
          }
        }
        Walk::BlockHeader { bytes: mut header, have } => {
          let take = (3 - have).min(bytes.len());
          header[have..have + take].copy_from_slice(&bytes[..take]);
          bytes = &bytes[take..];
          if have + take < 3 {
            self.walk = Walk::BlockHeader { bytes: header, have: have + take };
            continue;
          }
          let value = u32::from_le_bytes([header[0], header[1], header[2], 0]);
          let (last, kind, size) = (value & 1 != 0, (value >> 1) & 3, u64::from(value >> 3));
          let then = match (last, self.header[4] & 4 != 0) {
            (false, _) => Then::Block,
            (true, true) => Then::Checksum,
            (true, false) => Then::EndOfFrame,
          };
          self.walk = match kind {
            0 => Walk::Skip { left: size, then },
            1 => Walk::Skip { left: 1, then },
            2 if size == 0 => return Err(Failure::Zstd(corruption_code())),
            2 => Walk::Skip { left: size, then },
            _ => Walk::Off,
          };
          self.settle();
        }
        Walk::Skip { left, then } => {
          let take = usize::try_from(left).map_or(bytes.len(), |left| left.min(bytes.len()));
          bytes = &bytes[take..];
          self.walk = Walk::Skip { left: left - take as u64, then };
          self.settle();
        }
      }
    }
    Ok(())
  }

  /// Moves on from a `Skip` that has nothing left.
  fn settle(&mut self) {
    while let Walk::Skip { left: 0, then } = self.walk {
      self.walk = match then {
        Then::Block => Walk::BlockHeader { bytes: [0; 3], have: 0 },
        Then::Checksum => Walk::Skip { left: 4, then: Then::EndOfFrame },
        // Whatever follows in this frame is for libzstd to refuse.
        Then::EndOfFrame => Walk::Off,
      };
    }
  }
}
