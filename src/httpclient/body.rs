//! Reading response bodies with a bound: a peer's answer is input from the network, and no
//! peer may make us buffer more than we chose to accept.

use bytes::{Bytes, BytesMut};

/// Why a bounded read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("response body exceeds {limit} bytes; stopped reading")]
    TooLarge { limit: usize },
    #[error("reading the response body failed: {0}")]
    Transport(#[from] reqwest::Error),
}

/// Reads `resp`'s whole body, failing once it passes `limit` bytes (before buffering them).
pub async fn read_limited(mut resp: reqwest::Response, limit: usize) -> Result<Bytes, ReadError> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(ReadError::TooLarge { limit });
    }
    let mut buf = BytesMut::new();
    while let Some(chunk) = resp.chunk().await? {
        if buf.len() + chunk.len() > limit {
            return Err(ReadError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf.freeze())
}
