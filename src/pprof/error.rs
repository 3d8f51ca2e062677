//! Typed errors for everything that reads, checks or combines pprof profiles.
//!
//! Profiles come from the network, so every problem with the input is an error value naming the
//! problem and where it is; nothing in this module tree panics on input.

use thiserror::Error;

/// What is wrong at the protobuf wire level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The input ends inside a field.
    Truncated,
    /// A varint is longer than 10 bytes or does not fit in 64 bits.
    BadVarint,
    /// A field key is larger than 32 bits or names field 0.
    BadKey,
    /// Wire type 6 or 7, which protobuf does not define.
    UnknownWireType(u8),
    /// A known field arrives with a wire type its declared type cannot have.
    WrongWireType { field: u32, wire_type: u8 },
    /// An end-group marker without a matching start, or for another field.
    UnexpectedEndGroup,
    /// Groups nested deeper than protobuf decoders accept (100, like prost and Go).
    RecursionLimit,
    /// A packed or nested field's contents overrun its declared length.
    LengthMismatch,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Truncated => write!(f, "input ends inside a field"),
            WireError::BadVarint => write!(f, "varint longer than 64 bits"),
            WireError::BadKey => write!(f, "invalid field key"),
            WireError::UnknownWireType(w) => write!(f, "unknown wire type {w}"),
            WireError::WrongWireType { field, wire_type } => {
                write!(f, "field {field} has unexpected wire type {wire_type}")
            }
            WireError::UnexpectedEndGroup => write!(f, "unexpected end-group marker"),
            WireError::RecursionLimit => write!(f, "groups nested too deeply"),
            WireError::LengthMismatch => write!(f, "contents overrun the declared length"),
        }
    }
}

/// Everything that can be wrong with a profile, or with a request to combine profiles.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PprofError {
    #[error("profile exceeds the {limit}-byte size limit (after decompression)")]
    TooLarge { limit: usize },
    #[error("invalid gzip data: {0}")]
    Gzip(String),
    #[error("malformed protobuf at byte {offset}: {error}")]
    Wire { offset: usize, error: WireError },
    /// The slow path's decoder (prost) rejected the bytes; its message says why.
    #[error("malformed protobuf: {0}")]
    Protobuf(String),
    #[error("string_table[0] must be \"\" (the table is empty or starts with another string)")]
    StringTableStart,
    #[error("string_table[{index}] is not valid UTF-8")]
    InvalidUtf8 { index: usize },
    #[error("{field} refers to string {index}, but the string table has {len} entries")]
    StringIndex {
        field: &'static str,
        index: i64,
        len: usize,
    },
    #[error("{kind} with reserved id 0")]
    ZeroId { kind: &'static str },
    #[error("two {kind}s have id {id}")]
    DuplicateId { kind: &'static str, id: u64 },
    #[error("profile has samples but no sample types")]
    NoSampleTypes,
    #[error("sample {sample} has {got} values but the profile has {want} sample types")]
    ValueCount {
        sample: usize,
        got: usize,
        want: usize,
    },
    #[error("sample {sample} refers to unknown location id {id}")]
    UnknownLocation { sample: usize, id: u64 },
    #[error("location {location} has a line with unknown function id {id}")]
    UnknownFunction { location: u64, id: u64 },
    #[error("incompatible profiles: {0}")]
    Incompatible(String),
    #[error("no profiles given")]
    NoProfiles,
}

impl PprofError {
    pub(crate) fn wire(offset: usize, error: WireError) -> Self {
        PprofError::Wire { offset, error }
    }
}

pub type Result<T, E = PprofError> = std::result::Result<T, E>;
