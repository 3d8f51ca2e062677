//! The product's components, and the one place they are registered.
//!
//! To add a component: implement `crate::runtime::Component` for it in its own module, then add
//! one `.with(Registration::new::<YourComponent>("namespace.name"))` line to [`builtin`]. Nothing
//! else in the runtime, the CLI or the server needs to know about it.

use crate::runtime::{Registration, Registry};

/// Every component `scraper run` and `scraper check` accept.
pub fn builtin() -> Registry {
    Registry::new()
        .with(Registration::new::<crate::write::Write>("pyroscope.write"))
        .with(Registration::new::<crate::scrape::Scrape>(
            "pyroscope.scrape",
        ))
        .with(Registration::new::<crate::debug::Debug>("pyroscope.debug"))
        .with(Registration::new::<crate::discovery::relabel::Relabel>(
            "discovery.relabel",
        ))
        .with(Registration::new::<crate::discovery::kubernetes::Kubernetes>("discovery.kubernetes"))
        .with(Registration::new::<crate::discovery::process::Process>(
            "discovery.process",
        ))
        .with(Registration::new::<crate::ebpf::Ebpf>("pyroscope.ebpf"))
        .with(Registration::new::<crate::store::Store>("pyroscope.store"))
        .with(Registration::new::<crate::relabel::component::Relabel>(
            "pyroscope.relabel",
        ))
        .with(Registration::new::<crate::receive::ReceiveHttp>(
            "pyroscope.receive_http",
        ))
        .with(
            Registration::new::<crate::otlp::exporter::OtlpHttpProfiles>(
                "otelcol.exporter.otlphttp_profiles",
            ),
        )
}
