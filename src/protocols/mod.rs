//! Wire protocols we speak, as libraries that know no component: Pyroscope's push and query
//! APIs (`pyroscope`) and OTLP profiles (`otlp`). The pprof format itself is `crate::pprof`.

pub mod kubernetes;
pub mod otlp;
pub mod pyroscope;
