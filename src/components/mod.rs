//! The product's components, and the one place they are registered.
//!
//! To add a component: implement `crate::runtime::Component` for it in its own module, then add
//! one `.with(Registration::new::<YourComponent>("namespace.name"))` line to [`builtin`]. Nothing
//! else in the runtime, the CLI or the server needs to know about it.

#[cfg(test)]
mod check_tests;
pub mod discovery;
pub mod otelcol;
pub mod pyroscope;
pub mod remote;

use crate::runtime::{Registration, Registry};

/// Every component `scraper run` and `scraper check` accept.
pub fn builtin() -> Registry {
    Registry::new()
        .with(Registration::new::<
            crate::components::pyroscope::write::Write,
        >("pyroscope.write"))
        .with(Registration::new::<
            crate::components::pyroscope::scrape::Scrape,
        >("pyroscope.scrape"))
        .with(Registration::new::<
            crate::components::pyroscope::debug::Debug,
        >("pyroscope.debug"))
        .with(Registration::new::<
            crate::components::discovery::relabel::Relabel,
        >("discovery.relabel"))
        .with(Registration::new::<
            crate::components::discovery::sample::Sample,
        >("discovery.sample"))
        .with(Registration::new::<
            crate::components::discovery::kubernetes::Kubernetes,
        >("discovery.kubernetes"))
        .with(Registration::new::<
            crate::components::discovery::process::Process,
        >("discovery.process"))
        .with(Registration::new::<
            crate::components::discovery::docker::Docker,
        >("discovery.docker"))
        .with(Registration::new::<crate::components::discovery::file::File>("discovery.file"))
        .with(Registration::new::<crate::components::discovery::http::Http>("discovery.http"))
        .with(Registration::new::<crate::components::pyroscope::ebpf::Ebpf>("pyroscope.ebpf"))
        .with(Registration::new::<
            crate::components::pyroscope::store::Store,
        >("pyroscope.store"))
        .with(Registration::new::<
            crate::components::pyroscope::relabel::Relabel,
        >("pyroscope.relabel"))
        .with(Registration::new::<
            crate::components::pyroscope::enrich::Enrich,
        >("pyroscope.enrich"))
        .with(Registration::new::<
            crate::components::pyroscope::receive_http::ReceiveHttp,
        >("pyroscope.receive_http"))
        .with(Registration::new::<
            crate::components::otelcol::exporter_otlphttp::OtlpHttpProfiles,
        >("otelcol.exporter.otlphttp_profiles"))
        .with(Registration::new::<
            crate::components::otelcol::exporter_otlp::OtlpGrpcProfiles,
        >("otelcol.exporter.otlp"))
        .with(Registration::new::<
            crate::components::otelcol::receiver_otlp::ReceiverOtlp,
        >("otelcol.receiver.otlp"))
        .with(Registration::new::<
            crate::components::remote::kubernetes::Secret,
        >("remote.kubernetes.secret"))
        .with(Registration::new::<
            crate::components::remote::kubernetes::ConfigMap,
        >("remote.kubernetes.configmap"))
}
