//! The `remote.*` components: values read from elsewhere at runtime (Alloy's
//! `internal/component/remote`). Only `remote.kubernetes.secret` and
//! `remote.kubernetes.configmap` are implemented.

pub mod kubernetes;
