//! Protobuf wire format: a bounds-checked reader over borrowed bytes and the few writer helpers
//! the splicing encoder needs.
//!
//! The reader mirrors prost's acceptance rules exactly (varint length, key range, wire types,
//! group nesting limit) so that the zero-copy decoder and the prost-based slow path accept the
//! same inputs; the fuzz target checks that they agree. Lengths are only ever compared with the
//! bytes that remain, never used to reserve memory.

use super::error::{PprofError, Result, WireError};

pub(crate) const VARINT: u8 = 0;
pub(crate) const I64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const SGROUP: u8 = 3;
pub(crate) const EGROUP: u8 = 4;
pub(crate) const I32: u8 = 5;

/// prost's recursion limit; a top-level unknown field is skipped with this budget.
pub(crate) const RECURSION_LIMIT: u32 = 100;

/// A cursor over `buf`, which starts at byte `base` of the whole input (for error offsets).
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    #[inline]
    pub(crate) fn has_remaining(&self) -> bool {
        self.pos < self.buf.len()
    }

    /// Position of the cursor within this reader's bytes.
    #[inline]
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Absolute offset of the cursor in the whole input.
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    pub(crate) fn err(&self, error: WireError) -> PprofError {
        PprofError::wire(self.offset(), error)
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64> {
        // One- and two-byte varints are by far the most common (ids, indexes, wire keys).
        if let Some(&b0) = self.buf.get(self.pos) {
            if b0 < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b0));
            }
            if let Some(&b1) = self.buf.get(self.pos + 1)
                && b1 < 0x80
            {
                self.pos += 2;
                return Ok(u64::from(b0 & 0x7f) | (u64::from(b1) << 7));
            }
        }
        self.varint_slow()
    }

    #[cold]
    fn varint_slow(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos + i) else {
                return Err(self.err(WireError::BadVarint));
            };
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                // The tenth byte may only carry the top bit of a u64 (prost and Go agree).
                if i == 9 && b >= 0x02 {
                    return Err(self.err(WireError::BadVarint));
                }
                self.pos += i + 1;
                return Ok(value);
            }
        }
        Err(self.err(WireError::BadVarint))
    }

    /// Reads a field key: (field number, wire type).
    #[inline]
    pub(crate) fn key(&mut self) -> Result<(u32, u8)> {
        let at = self.offset();
        let key = self.varint()?;
        if key > u64::from(u32::MAX) {
            return Err(PprofError::wire(at, WireError::BadKey));
        }
        let wire_type = (key & 7) as u8;
        if wire_type > I32 {
            return Err(PprofError::wire(at, WireError::UnknownWireType(wire_type)));
        }
        let field = (key >> 3) as u32;
        if field == 0 {
            return Err(PprofError::wire(at, WireError::BadKey));
        }
        Ok((field, wire_type))
    }

    /// Reads a length-delimited payload; returns it with its absolute start offset.
    #[inline]
    pub(crate) fn bytes(&mut self) -> Result<(usize, &'a [u8])> {
        let len = self.varint()?;
        let remaining = self.buf.len() - self.pos;
        if len > remaining as u64 {
            return Err(self.err(WireError::Truncated));
        }
        let start = self.pos;
        self.pos += len as usize;
        Ok((self.base + start, &self.buf[start..self.pos]))
    }

    /// A sub-reader over a length-delimited payload.
    #[inline]
    pub(crate) fn message(&mut self) -> Result<Reader<'a>> {
        let (start, bytes) = self.bytes()?;
        Ok(Reader::new(bytes, start))
    }

    /// Skips a field of an unknown number, exactly as prost's `skip_field` does, including the
    /// recursion budget that bounds group nesting.
    pub(crate) fn skip(&mut self, wire_type: u8, field: u32, budget: u32) -> Result<()> {
        if budget == 0 {
            return Err(self.err(WireError::RecursionLimit));
        }
        let len = match wire_type {
            VARINT => {
                self.varint()?;
                0
            }
            I64 => 8,
            I32 => 4,
            LEN => self.varint()?,
            SGROUP => loop {
                let (inner, inner_wire) = self.key()?;
                if inner_wire == EGROUP {
                    if inner != field {
                        return Err(self.err(WireError::UnexpectedEndGroup));
                    }
                    break 0;
                }
                self.skip(inner_wire, inner, budget - 1)?;
            },
            _ => return Err(self.err(WireError::UnexpectedEndGroup)),
        };
        if len > (self.buf.len() - self.pos) as u64 {
            return Err(self.err(WireError::Truncated));
        }
        self.pos += len as usize;
        Ok(())
    }

    /// Reads one value of a repeated varint field that may be packed (LEN) or not (VARINT),
    /// calling `f` for each value.
    #[inline]
    pub(crate) fn repeated_varint(
        &mut self,
        field: u32,
        wire_type: u8,
        mut f: impl FnMut(u64) -> Result<()>,
    ) -> Result<()> {
        match wire_type {
            VARINT => f(self.varint()?),
            LEN => {
                let mut packed = self.message()?;
                while packed.has_remaining() {
                    f(packed.varint()?)?;
                }
                Ok(())
            }
            _ => Err(self.err(WireError::WrongWireType { field, wire_type })),
        }
    }

    /// Reads a scalar varint field, checking its wire type.
    #[inline]
    pub(crate) fn scalar(&mut self, field: u32, wire_type: u8) -> Result<u64> {
        if wire_type != VARINT {
            return Err(self.err(WireError::WrongWireType { field, wire_type }));
        }
        self.varint()
    }

    /// Checks that a known message or string field is length-delimited.
    #[inline]
    pub(crate) fn expect_len(&self, field: u32, wire_type: u8) -> Result<()> {
        if wire_type != LEN {
            return Err(self.err(WireError::WrongWireType { field, wire_type }));
        }
        Ok(())
    }
}

#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits; 0 still takes one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[inline]
pub(crate) fn put_key(out: &mut Vec<u8>, field: u32, wire_type: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire_type));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        // (bytes, expected value or None for an error)
        let cases: &[(&[u8], Option<u64>)] = &[
            (&[0x00], Some(0)),
            (&[0x7f], Some(127)),
            (&[0x80, 0x01], Some(128)),
            (&[0xff, 0xff, 0xff, 0xff, 0x0f], Some(u64::from(u32::MAX))),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
                Some(u64::MAX),
            ),
            // Tenth byte carrying more than one bit overflows u64.
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                None,
            ),
            // Eleven bytes.
            (
                &[
                    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
                ],
                None,
            ),
            (&[0x80], None),
            (&[], None),
        ];
        for (bytes, want) in cases {
            let got = Reader::new(bytes, 0).varint().ok();
            assert_eq!(got, *want, "{bytes:x?}");
            if let Some(v) = want {
                let mut out = Vec::new();
                put_varint(&mut out, *v);
                assert_eq!(out.len(), varint_len(*v));
                assert_eq!(Reader::new(&out, 0).varint().ok(), Some(*v));
            }
        }
    }

    #[test]
    fn keys() {
        type Case<'a> = (&'a [u8], Option<(u32, u8)>);
        let cases: &[Case] = &[
            (&[0x08], Some((1, VARINT))),
            (&[0x12], Some((2, LEN))),
            (&[0x02], None), // field 0
            (&[0x0e], None), // wire type 6
            (&[0x0f], None), // wire type 7
            (
                &[0xf8, 0xff, 0xff, 0xff, 0x0f],
                Some(((1 << 29) - 1, VARINT)),
            ),
            (&[0x80, 0x80, 0x80, 0x80, 0x10], None), // > u32::MAX
        ];
        for (bytes, want) in cases {
            assert_eq!(Reader::new(bytes, 0).key().ok(), *want, "{bytes:x?}");
        }
    }

    #[test]
    fn skipping() {
        // (wire bytes of one unknown field 16 including its key, ok?)
        let cases: &[(&[u8], bool)] = &[
            (&[0x80, 0x01, 0x05], true),                    // varint
            (&[0x81, 0x01, 1, 2, 3, 4, 5, 6, 7, 8], true),  // fixed64
            (&[0x81, 0x01, 1, 2, 3], false),                // truncated fixed64
            (&[0x85, 0x01, 1, 2, 3, 4], true),              // fixed32
            (&[0x82, 0x01, 0x02, 9, 9], true),              // len
            (&[0x82, 0x01, 0x03, 9, 9], false),             // len overruns
            (&[0x83, 0x01, 0x08, 0x01, 0x84, 0x01], true),  // group with a varint inside
            (&[0x83, 0x01, 0x08, 0x01, 0x8c, 0x01], false), // group closed by another field
            (&[0x83, 0x01, 0x08, 0x01], false),             // group never closed
            (&[0x84, 0x01], false),                         // stray end group
        ];
        for (bytes, ok) in cases {
            let mut r = Reader::new(bytes, 0);
            let result = r.key().and_then(|(f, w)| r.skip(w, f, RECURSION_LIMIT));
            assert_eq!(result.is_ok(), *ok, "{bytes:x?}: {result:?}");
            if *ok {
                assert!(!r.has_remaining());
            }
        }
    }

    #[test]
    fn group_nesting_limit_matches_prost() {
        fn nested(depth: usize) -> Vec<u8> {
            let mut v = Vec::new();
            for _ in 0..depth {
                v.push(0x83); // start group, field 16
                v.push(0x01);
            }
            for _ in 0..depth {
                v.push(0x84);
                v.push(0x01);
            }
            v
        }
        for depth in [1, 50, 99, 100, 101, 150] {
            let bytes = nested(depth);
            let mut r = Reader::new(&bytes, 0);
            let ours = r
                .key()
                .and_then(|(f, w)| r.skip(w, f, RECURSION_LIMIT))
                .is_ok();
            let theirs =
                <crate::pprof::proto::Profile as prost::Message>::decode(&bytes[..]).is_ok();
            assert_eq!(ours, theirs, "depth {depth}");
        }
    }
}
