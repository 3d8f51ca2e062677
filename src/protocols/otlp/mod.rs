//! OTLP profiles: the generated messages ([`proto`]), the pprof ⇄ OTLP conversion
//! ([`convert`], [`to_pprof`], attribute values as labels in [`labels`]), Pyroscope's ingestion
//! rules for received requests ([`ingest`]: series labels, `__name__`, CPU samples to
//! nanoseconds) and the gRPC framing of the `Export` method ([`grpc`]), used by
//! `otelcol.receiver.otlp` and the exporters in `components::otelcol`.
//!
//! Target: the OTLP profiles signal `opentelemetry.proto.profiles.v1development` as of
//! opentelemetry-proto 1.11 (the version with the request-wide `ProfilesDictionary`, its
//! `stack_table` and `KeyValueAndUnit` attributes; what Pyroscope ingests and what the PyPI
//! package opentelemetry-proto 1.45 decodes). The signal is still in Development, so every
//! schema-dependent line lives in `convert.rs`, `to_pprof.rs`, `labels.rs` and
//! proto/opentelemetry/.

pub mod convert;
mod estimate;
pub mod grpc;
pub mod ingest;
pub mod labels;
mod pprof_strings;
pub mod proto;
pub mod to_pprof;
