//! A logfmt event formatter for tracing-subscriber, producing lines shaped like Alloy's default
//! logs: `ts=2024-05-06T10:00:00.123Z level=info msg="now listening" addr=127.0.0.1:12345`,
//! followed by the fields of the enclosing spans (e.g. `component_id=...`).

use std::fmt;
use std::time::SystemTime;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use crate::gocompat::time::rfc3339_millis;

#[derive(Clone, Copy, Debug, Default)]
pub struct Logfmt;

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = match *event.metadata().level() {
            Level::ERROR => "error",
            Level::WARN => "warn",
            Level::INFO => "info",
            Level::DEBUG | Level::TRACE => "debug",
        };
        write!(w, "ts={} level={level}", rfc3339_millis(SystemTime::now()))?;
        let mut fields = Fields::default();
        event.record(&mut fields);
        if let Some(msg) = &fields.message {
            w.write_str(" msg=")?;
            write_value(&mut w, msg)?;
        }
        for (key, value) in &fields.rest {
            write!(w, " {key}=")?;
            write_value(&mut w, value)?;
        }
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let ext = span.extensions();
                if let Some(formatted) = ext.get::<FormattedFields<N>>()
                    && !formatted.is_empty()
                {
                    write!(w, " {formatted}")?;
                }
            }
        }
        writeln!(w)
    }
}

#[derive(Default)]
struct Fields {
    message: Option<String>,
    rest: Vec<(&'static str, String)>,
}

impl Fields {
    fn put(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.message = Some(value);
        } else {
            self.rest.push((field.name(), value));
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.to_string());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}"));
    }
}

/// Writes a logfmt value, quoting only when needed so that plain values stay greppable.
fn write_value(w: &mut impl fmt::Write, value: &str) -> fmt::Result {
    let needs_quotes = value.is_empty()
        || value
            .chars()
            .any(|c| c == ' ' || c == '=' || c == '"' || c == '\\' || c.is_control());
    if !needs_quotes {
        return w.write_str(value);
    }
    w.write_char('"')?;
    for c in value.chars() {
        match c {
            '"' => w.write_str("\\\"")?,
            '\\' => w.write_str("\\\\")?,
            '\n' => w.write_str("\\n")?,
            '\r' => w.write_str("\\r")?,
            '\t' => w.write_str("\\t")?,
            c if c.is_control() => write!(w, "\\u{{{:x}}}", c as u32)?,
            c => w.write_char(c)?,
        }
    }
    w.write_char('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        let cases = [
            ("plain", "plain"),
            ("127.0.0.1:12345", "127.0.0.1:12345"),
            ("", r#""""#),
            ("two words", r#""two words""#),
            ("a=b", r#""a=b""#),
            (r#"say "hi""#, r#""say \"hi\"""#),
            ("line\nbreak", r#""line\nbreak""#),
            (r"back\slash", r#""back\\slash""#),
        ];
        for (input, want) in cases {
            let mut out = String::new();
            write_value(&mut out, input).expect("write");
            assert_eq!(out, want, "{input:?}");
        }
    }
}
