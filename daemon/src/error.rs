//! Errors of the daemon library, split by who must act.

use std::path::{Path, PathBuf};

/// A request the user must fix (bad query, unknown project, bad path).
#[derive(Debug, thiserror::Error)]
pub enum UserError {
    /// The project root does not exist or is not a directory.
    #[error("project root {path} is not a directory: {reason}")]
    BadRoot {
        /// The root given.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// An argument is invalid.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Failures of a project's index (storage and I/O), with context.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// LMDB failed.
    #[error("LMDB error in {path}: {source}")]
    Lmdb {
        /// The environment's directory.
        path: PathBuf,
        /// The heed error.
        #[source]
        source: heed::Error,
    },
    /// tantivy failed.
    #[error("tantivy error in {path}: {source}")]
    Tantivy {
        /// The index directory.
        path: PathBuf,
        /// The tantivy error.
        #[source]
        source: tantivy::TantivyError,
    },
    /// File-system I/O failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The vector store (arroy) failed.
    #[error("vector store error in {path}: {source}")]
    Vectors {
        /// The environment's directory.
        path: PathBuf,
        /// The arroy error.
        #[source]
        source: arroy::Error,
    },
    /// The project's writer thread is gone.
    #[error("the index writer for {0} has stopped")]
    WriterGone(PathBuf),
}

impl IndexError {
    /// A vector store error in `path`.
    pub fn vectors(path: &Path, source: arroy::Error) -> Self {
        IndexError::Vectors {
            path: path.to_path_buf(),
            source,
        }
    }

    /// An LMDB error in `path`.
    pub fn lmdb(path: &Path, source: heed::Error) -> Self {
        IndexError::Lmdb {
            path: path.to_path_buf(),
            source,
        }
    }
    /// A tantivy error in `path`.
    pub fn tantivy(path: &Path, source: tantivy::TantivyError) -> Self {
        IndexError::Tantivy {
            path: path.to_path_buf(),
            source,
        }
    }
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        IndexError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Any error a daemon request can end in.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller's fault.
    #[error(transparent)]
    User(#[from] UserError),
    /// The index's fault.
    #[error(transparent)]
    Index(#[from] IndexError),
}
