//! The `otelcol.*` components: the OpenTelemetry Collector's names for what we share with it.

pub mod exporter_otlp;
pub mod exporter_otlphttp;
pub mod receiver_otlp;
