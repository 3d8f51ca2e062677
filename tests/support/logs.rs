//! Log lines captured in-process: a process-wide subscriber writing JSON lines (info and above,
//! fields flattened) into a buffer the tests read. One per test binary: tests running side by
//! side tell their lines apart by a field, e.g. their own receiver's URL as `endpoint`.

#![allow(dead_code)] // each test binary uses a different subset

use std::sync::{Mutex, Once};

use serde_json::Value;

static BUFFER: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Appends what the subscriber writes; it writes each event whole, in one call.
struct Sink;

impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        BUFFER
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts capturing (once per process; later calls do nothing).
pub fn capture() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_max_level(tracing::Level::INFO)
            .with_writer(|| Sink)
            .try_init()
            .expect("no other global subscriber in this test binary");
    });
}

/// Every line captured so far.
pub fn lines() -> Vec<Value> {
    let buffer = BUFFER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    String::from_utf8_lossy(&buffer)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The lines whose `field` is `value`, and whose message is `message` if given.
pub fn matching(field: &str, value: &str, message: Option<&str>) -> Vec<Value> {
    lines()
        .into_iter()
        .filter(|l| l[field] == value)
        .filter(|l| message.is_none_or(|m| l["message"] == m))
        .collect()
}

/// A line's field as a number (0 when absent).
pub fn number(line: &Value, field: &str) -> u64 {
    line[field].as_u64().unwrap_or(0)
}

/// Every captured line, one per line, for failure messages.
pub fn dump() -> String {
    lines()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}
