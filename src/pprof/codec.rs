//! Bytes in and out: gzip (decompression capped by [`Limits`]), and the prost-based slow path
//! that decodes a whole [`Profile`] tree (used by `info`, `merge` and the trimming helpers).
//!
//! gzip framing is done here around raw deflate streams so the inflate/deflate states can be
//! reset and reused between scrapes; zlib-rs re-creates its state on reset in gzip mode, and
//! allocating and zeroing a fresh ~300 KiB deflate state costs more than the whole delta of a
//! typical small profile.

use flate2::{Compress, Compression, Crc, Decompress, FlushCompress, FlushDecompress, Status};
use prost::Message as _;

use super::error::{PprofError, Result};
use super::proto::Profile;
use super::validate::validate;
use super::view::validate_raw;

/// Default cap on a profile's decompressed size. Go heap profiles of very large services reach
/// a few MiB; Pyroscope rejects anything over 4 MiB by default.
pub const DEFAULT_MAX_DECOMPRESSED: usize = 64 << 20;

/// Default gzip level of profiles written by tools (`encode`, `scraper pprof`): gzip's default,
/// which is also what Go's `profile.Write` uses.
pub const DEFAULT_LEVEL: u32 = 6;

/// Default gzip level of delta profiles on the scrape path. gzip dominates the cost of a round
/// for typical (small) profiles: level 1 takes about half the CPU of level 6 for a 15-30%
/// larger upload, and Pyroscope's size and rate limits count decompressed bytes, so the larger
/// upload costs nothing but bandwidth (docs/PERFORMANCE.md).
pub const DELTA_LEVEL: u32 = 1;

/// Bounds applied while decoding untrusted input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted raw protobuf, whether it arrived gzipped or not. Values above
    /// `u32::MAX` are treated as `u32::MAX`: the zero-copy decoder stores 32-bit offsets.
    pub max_decompressed_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

impl Limits {
    pub(crate) fn max(&self) -> usize {
        self.max_decompressed_bytes.min(u32::MAX as usize)
    }
}

/// Whether `data` starts with the gzip magic; pprof readers (Go's `ParseData`) decide the same way.
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b])
}

/// The size `raw` decompresses to, as its gzip trailer declares it (modulo 2^32, so never
/// taken below the compressed size); a plain profile is its own size. For sizing buffers and
/// budgets, not for trusting: the trailer is the sender's word.
pub fn declared_size(raw: &[u8]) -> usize {
    if is_gzip(raw) && raw.len() >= 18 {
        let t = &raw[raw.len() - 4..];
        (u32::from_le_bytes([t[0], t[1], t[2], t[3]]) as usize).max(raw.len())
    } else {
        raw.len()
    }
}

/// A reusable gzip decompressor.
pub struct Inflater {
    inflate: Decompress,
}

impl Default for Inflater {
    fn default() -> Self {
        Inflater {
            inflate: Decompress::new(false),
        }
    }
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inflater")
    }
}

impl Inflater {
    /// Returns the raw protobuf: `input` itself when it is not gzip, else its decompression
    /// written into `scratch` (cleared first; its capacity is reused).
    pub fn raw<'a>(
        &mut self,
        input: &'a [u8],
        limits: &Limits,
        scratch: &'a mut Vec<u8>,
    ) -> Result<&'a [u8]> {
        let max = limits.max();
        if !is_gzip(input) {
            if input.len() > max {
                return Err(PprofError::TooLarge { limit: max });
            }
            return Ok(input);
        }
        scratch.clear();
        self.gunzip_into(input, max, scratch)?;
        Ok(scratch.as_slice())
    }

    /// Decompresses every gzip member of `input` into `out`, failing once `out` would exceed
    /// `max` bytes.
    fn gunzip_into(&mut self, input: &[u8], max: usize, out: &mut Vec<u8>) -> Result<()> {
        // The ISIZE trailer is a length field of the input: use it only as a hint, bounded by
        // the limit and by a multiple of the compressed size, so a 20-byte input cannot make us
        // reserve 64 MiB.
        let hint = input
            .len()
            .checked_sub(4)
            .and_then(|at| input.get(at..))
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(|b| u32::from_le_bytes(b) as usize)
            .unwrap_or(0)
            .min(max)
            .min(input.len().saturating_mul(16).saturating_add(4096));
        out.reserve(hint);
        let mut rest = input;
        loop {
            let body = gzip_header(rest)?;
            let member_start = out.len();
            self.inflate.reset(false);
            let consumed = self.inflate_member(body, max, out)?;
            let trailer = body
                .get(consumed..consumed + 8)
                .ok_or_else(|| PprofError::Gzip("missing gzip trailer".into()))?;
            let mut crc = Crc::new();
            crc.update(&out[member_start..]);
            let want_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
            let want_len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
            if crc.sum() != want_crc {
                return Err(PprofError::Gzip("checksum mismatch".into()));
            }
            if (out.len() - member_start) as u32 != want_len {
                return Err(PprofError::Gzip("length mismatch".into()));
            }
            rest = &body[consumed + 8..];
            if rest.is_empty() {
                return Ok(());
            }
            // Like Go's gzip reader (multistream), another member may follow; anything else
            // after the first member is an error rather than silently ignored.
            if !is_gzip(rest) {
                return Err(PprofError::Gzip("trailing bytes after gzip data".into()));
            }
        }
    }

    /// Inflates one raw deflate stream; returns how many input bytes it used.
    fn inflate_member(&mut self, body: &[u8], max: usize, out: &mut Vec<u8>) -> Result<usize> {
        let start_in = self.inflate.total_in();
        loop {
            if out.len() == out.capacity() {
                if out.len() > max {
                    return Err(PprofError::TooLarge { limit: max });
                }
                // Grow geometrically but never past max + 1 (one byte over proves "too large").
                let want = out.capacity().max(32 << 10).min(max + 1 - out.len());
                out.reserve(want);
            }
            let used = (self.inflate.total_in() - start_in) as usize;
            let before_out = self.inflate.total_out();
            let before_in = self.inflate.total_in();
            let status = self
                .inflate
                .decompress_vec(&body[used..], out, FlushDecompress::None)
                .map_err(|e| PprofError::Gzip(e.to_string()))?;
            if out.len() > max {
                return Err(PprofError::TooLarge { limit: max });
            }
            match status {
                Status::StreamEnd => return Ok((self.inflate.total_in() - start_in) as usize),
                Status::Ok | Status::BufError => {
                    let progressed = self.inflate.total_in() != before_in
                        || self.inflate.total_out() != before_out;
                    if !progressed && out.len() < out.capacity() {
                        return Err(PprofError::Gzip("truncated gzip data".into()));
                    }
                }
            }
        }
    }
}

/// Parses a gzip member header (RFC 1952) and returns the bytes after it.
fn gzip_header(data: &[u8]) -> Result<&[u8]> {
    let bad = |what: &str| PprofError::Gzip(what.to_string());
    if data.len() < 10 || !is_gzip(data) {
        return Err(bad("missing gzip header"));
    }
    if data[2] != 8 {
        return Err(bad("unknown compression method"));
    }
    let flags = data[3];
    if flags & 0xe0 != 0 {
        return Err(bad("reserved header flags set"));
    }
    let mut rest = &data[10..];
    if flags & 0x04 != 0 {
        // FEXTRA: two-byte length, then that many bytes.
        let len = rest
            .get(..2)
            .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            .ok_or_else(|| bad("truncated gzip header"))?;
        rest = rest
            .get(2 + len..)
            .ok_or_else(|| bad("truncated gzip header"))?;
    }
    for flag in [0x08, 0x10] {
        // FNAME, FCOMMENT: zero-terminated.
        if flags & flag != 0 {
            let end = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad("truncated gzip header"))?;
            rest = &rest[end + 1..];
        }
    }
    if flags & 0x02 != 0 {
        // FHCRC: a CRC16 of the header; Go and zlib accept it without requiring it.
        rest = rest.get(2..).ok_or_else(|| bad("truncated gzip header"))?;
    }
    Ok(rest)
}

/// A reusable gzip compressor at a fixed level.
pub struct Deflater {
    deflate: Compress,
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Deflater")
    }
}

impl Deflater {
    /// `level` is gzip's 0 (store) ..= 9 (smallest); larger values are treated as 9.
    pub fn new(level: u32) -> Self {
        Deflater {
            deflate: Compress::new(Compression::new(level.min(9)), false),
        }
    }

    /// Appends `raw`, gzipped, to `out`.
    pub fn gzip_into(&mut self, raw: &[u8], out: &mut Vec<u8>) {
        self.deflate.reset();
        // Header as Go's gzip.Writer writes it: no name, no mtime, OS "unknown".
        out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        out.reserve(raw.len() / 4 + 64);
        let start_in = self.deflate.total_in();
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(4096));
            }
            let used = (self.deflate.total_in() - start_in) as usize;
            let status = self
                .deflate
                .compress_vec(&raw[used..], out, FlushCompress::Finish);
            match status {
                Ok(Status::StreamEnd) => break,
                // Only a full output buffer stops deflate early with Finish; the loop grows it.
                Ok(Status::Ok | Status::BufError) => {}
                // Compressing into a growing Vec cannot fail; if the backend ever reports an
                // error the stream would be corrupt, so stop rather than loop forever.
                Err(_) => break,
            }
        }
        let mut crc = Crc::new();
        crc.update(raw);
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    }
}

/// gzips `raw` at `level` (0..=9).
pub fn gzip(raw: &[u8], level: u32) -> Vec<u8> {
    let mut out = Vec::new();
    Deflater::new(level).gzip_into(raw, &mut out);
    out
}

/// Decompresses `input` if it is gzip (else copies it), within `limits`.
pub fn gunzip(input: &[u8], limits: &Limits) -> Result<Vec<u8>> {
    let mut scratch = Vec::new();
    if is_gzip(input) {
        Inflater::default().gunzip_into(input, limits.max(), &mut scratch)?;
        return Ok(scratch);
    }
    Ok(Inflater::default()
        .raw(input, limits, &mut scratch)?
        .to_vec())
}

/// Decodes a gzipped or raw profile into a prost tree and validates it.
///
/// The zero-copy decoder checks the bytes first: it accepts exactly what prost + [`validate`]
/// accept (the fuzz target checks that), and its errors say where the problem is.
pub fn decode(input: &[u8], limits: &Limits) -> Result<Profile> {
    let mut scratch = Vec::new();
    let raw = Inflater::default().raw(input, limits, &mut scratch)?;
    validate_raw(raw)?;
    let profile = Profile::decode(raw).map_err(|e| PprofError::Protobuf(e.to_string()))?;
    validate(&profile)?;
    Ok(profile)
}

/// Encodes `profile` as gzipped pprof at `level`.
pub fn encode(profile: &Profile, level: u32) -> Vec<u8> {
    gzip(&profile.encode_to_vec(), level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_round_trip_and_flate2_interop() {
        use std::io::{Read as _, Write as _};
        for (level, raw) in [
            (1, b"hello pprof".repeat(1000)),
            (6, Vec::new()),
            (9, (0..=255u8).cycle().take(100_000).collect()),
        ] {
            let gz = gzip(&raw, level);
            // Readable by a standard gzip reader...
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_end(&mut back)
                .expect("flate2 reads our gzip");
            assert_eq!(back, raw);
            // ...and ours reads a standard writer's output.
            let mut w = flate2::write::GzEncoder::new(Vec::new(), Compression::new(level));
            w.write_all(&raw).expect("write");
            let theirs = w.finish().expect("finish");
            assert_eq!(gunzip(&theirs, &Limits::default()).expect("gunzip"), raw);
        }
    }

    #[test]
    fn multiple_members_are_concatenated() {
        let mut gz = gzip(b"abc", 6);
        gz.extend_from_slice(&gzip(b"def", 1));
        assert_eq!(gunzip(&gz, &Limits::default()).expect("gunzip"), b"abcdef");
    }

    #[test]
    fn bad_gzip_is_an_error() {
        let good = gzip(&b"x".repeat(5000), 6);
        let mut bad_crc = good.clone();
        let n = bad_crc.len();
        bad_crc[n - 8] ^= 1;
        let mut trailing = good.clone();
        trailing.push(0);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("truncated body", good[..good.len() / 2].to_vec()),
            ("truncated trailer", good[..good.len() - 3].to_vec()),
            ("header only", good[..10].to_vec()),
            ("short header", vec![0x1f, 0x8b, 8]),
            ("bad method", [&[0x1f, 0x8b, 7][..], &good[3..]].concat()),
            ("bad crc", bad_crc),
            ("trailing garbage", trailing),
            (
                "garbage body",
                vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff],
            ),
        ];
        for (name, input) in cases {
            let err = gunzip(&input, &Limits::default()).expect_err(name);
            assert!(matches!(err, PprofError::Gzip(_)), "{name}: {err:?}");
        }
    }

    #[test]
    fn limit_is_enforced_without_trusting_isize() {
        let raw = vec![0u8; 1 << 20];
        let mut gz = gzip(&raw, 6);
        let limits = Limits {
            max_decompressed_bytes: 1000,
        };
        assert_eq!(
            gunzip(&gz, &limits),
            Err(PprofError::TooLarge { limit: 1000 })
        );
        // Exactly at the limit is fine.
        let at = Limits {
            max_decompressed_bytes: 1 << 20,
        };
        assert_eq!(gunzip(&gz, &at).map(|v| v.len()), Ok(1 << 20));
        // A lying ISIZE of 4 GiB must not make us reserve it.
        let n = gz.len();
        gz[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut scratch = Vec::new();
        let r = Inflater::default().raw(&gz, &Limits::default(), &mut scratch);
        assert!(matches!(r, Err(PprofError::Gzip(_))), "{r:?}");
        assert!(scratch.capacity() < 32 << 20, "{}", scratch.capacity());
        // Raw input is bounded too.
        assert_eq!(
            Inflater::default().raw(&raw, &limits, &mut Vec::new()),
            Err(PprofError::TooLarge { limit: 1000 })
        );
    }
}
