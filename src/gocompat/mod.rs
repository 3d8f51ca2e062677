//! Go's behaviour where we must match it byte for byte: Alloy and Prometheus are Go programs,
//! and their users see Go's quoting in error messages, labels and formatted configs, and Go's
//! URL escaping in query strings. One implementation each, tested against Go's own output
//! (`tests/gocompat_oracle.rs` runs a Go program over every code point).
//!
//! * [`quote`]: `strconv.Quote`, `QuoteToASCII`, `QuoteRune`, and `unicode.IsPrint`.
//! * [`strconv`]: `strconv.FormatFloat`, with Go's shortest decimal (and its choice between
//!   equally close candidates).
//! * [`unicode`]: membership in Unicode ranges (Go's `unicode.Is`).
//! * [`url`]: `url.QueryEscape`, `url.QueryUnescape` (lossy, and a strict variant), and
//!   `url.ParseQuery(..).Get`.
//!
//! This is the bottom layer: it depends on no other module of the crate.

pub mod quote;
pub mod strconv;
pub mod time;
pub mod unicode;
pub mod url;

pub use quote::{is_print, quote, quote_ascii, quote_rune};
pub use url::{query_escape, query_unescape};
