//! Where the explorer reads: every `pyroscope.store` open in this process, as one source, on
//! a blocking thread (store reads are blocking).

use super::error::ApiError;
use crate::query::stores::Stores;
use crate::store::OpenStores;

/// The open stores as one source; 404 when there is none.
fn open(stores: &OpenStores) -> Result<Stores, ApiError> {
    let stores = Stores::running(stores);
    if stores.is_empty() {
        return Err(ApiError::no_store());
    }
    Ok(stores)
}

/// Runs `read` over the open stores on a blocking thread named `name`.
pub(super) async fn read<T, F>(
    name: &'static str,
    stores: &OpenStores,
    read: F,
) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce(&Stores) -> Result<T, ApiError> + Send + 'static,
{
    let stores = stores.clone();
    crate::runtime::task::spawn_blocking(name, move || read(&open(&stores)?))
        .await
        .map_err(|e| ApiError::internal(format!("reading the stores failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn no_store_is_a_404() {
        let err = read("test.explore", &OpenStores::default(), |_| Ok(()))
            .await
            .expect_err("no store");
        assert_eq!(err, ApiError::no_store());
    }
}
