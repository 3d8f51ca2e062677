//! What can go wrong with a store, worded for the person running `scraper`.

use std::path::{Path, PathBuf};

/// Errors of [`super::Db`] and the `pyroscope.store` component.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Db { path: PathBuf, source: redb::Error },
    #[error(
        "the profile store {} is in use by another process (a running `scraper run` with this pyroscope.store?){hint}",
        path.display()
    )]
    Locked { path: PathBuf, hint: String },
    #[error("no profile store at {} (expected {})", path.display(), path.join(super::db::FILE).display())]
    NotFound { path: PathBuf },
    #[error(
        "{}: store format version {found}, this scraper reads version {expected}",
        path.display()
    )]
    Version {
        path: PathBuf,
        found: u64,
        expected: u64,
    },
    #[error("{}: corrupt store: {message}", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("{}: the store is open read-only", path.display())]
    ReadOnly { path: PathBuf },
    #[error("invalid mark: {0}")]
    InvalidMark(String),
    /// Returned by a caller's callback (e.g. from `select`), passed through unchanged.
    #[error("{0}")]
    Callback(String),
}

impl StoreError {
    /// Whether the database handle is unusable and must be reopened: redb refuses every
    /// further commit after an I/O error (`PreviousIo`), so retrying on the same handle is
    /// pointless.
    pub fn needs_reopen(&self) -> bool {
        matches!(
            self,
            StoreError::Db {
                source: redb::Error::Io(_) | redb::Error::PreviousIo,
                ..
            }
        )
    }

    /// Whether another process (or another handle in this one) holds the store.
    pub fn is_locked(&self) -> bool {
        matches!(self, StoreError::Locked { .. })
    }

    pub(crate) fn corrupt(path: &Path, message: impl Into<String>) -> Self {
        StoreError::Corrupt {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// Attaches the store's path to redb's errors, which never name the file.
pub(crate) trait AtPath<T> {
    fn at(self, path: &Path) -> Result<T, StoreError>;
}

impl<T, E: Into<redb::Error>> AtPath<T> for Result<T, E> {
    fn at(self, path: &Path) -> Result<T, StoreError> {
        self.map_err(|e| StoreError::Db {
            path: path.to_path_buf(),
            source: e.into(),
        })
    }
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
