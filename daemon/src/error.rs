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
    /// The vector store (hannoy's graph) failed.
    #[error("vector store error in {path}: {source}")]
    Vectors {
        /// The environment's directory.
        path: PathBuf,
        /// The ANN index's error.
        #[source]
        source: crate::index::store::AnnError,
    },
    /// The index on disk is damaged (found by the check before it is opened, or by a read).
    #[error("the index in {path} is damaged: {reason}")]
    Damaged {
        /// The index's directory.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// The project's writer thread is gone.
    #[error("the index writer for {0} has stopped")]
    WriterGone(PathBuf),
    /// A commit since the last flush failed and its changes were dropped; the next pass
    /// re-reads what they held.
    #[error("an earlier commit failed, its changes were dropped: {0}")]
    EarlierCommit(String),
}

impl IndexError {
    /// A vector store error in `path`.
    pub fn vectors(path: &Path, source: crate::index::store::AnnError) -> Self {
        IndexError::Vectors {
            path: path.to_path_buf(),
            source,
        }
    }

    /// What the user can do about this error, when its cause is one they can fix: a full
    /// disk, a read-only data directory, too many open files.
    pub fn hint(&self) -> Option<&'static str> {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(error) = source {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                return match io.raw_os_error() {
                    Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
                        Some("disk full: free space on the data directory's disk")
                    }
                    Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => {
                        Some("the data directory is not writable: check its mount and permissions")
                    }
                    Some(libc::EMFILE) | Some(libc::ENFILE) => {
                        Some("out of file descriptors: raise the open-files limit (ulimit -n)")
                    }
                    _ => None,
                };
            }
            if let Some(heed::Error::Mdb(heed::MdbError::MapFull)) =
                error.downcast_ref::<heed::Error>()
            {
                return Some("the index map is full");
            }
            source = error.source();
        }
        let text = self.to_string();
        if text.contains("No space left") {
            Some("disk full: free space on the data directory's disk")
        } else if text.contains("Read-only file system") {
            Some("the data directory is not writable: check its mount and permissions")
        } else if text.contains("Too many open files") {
            Some("out of file descriptors: raise the open-files limit (ulimit -n)")
        } else {
            None
        }
    }

    /// Whether this error says the index on disk is damaged (a page LMDB cannot follow, a
    /// record that does not decode, a tantivy file failing its checks), as opposed to a
    /// passing condition (a full disk, a missing file descriptor).
    pub fn is_damage(&self) -> bool {
        match self {
            IndexError::Damaged { .. } => true,
            IndexError::Lmdb { source, .. } => matches!(
                source,
                heed::Error::Decoding(_)
                    | heed::Error::Mdb(
                        heed::MdbError::Corrupted
                            | heed::MdbError::PageNotFound
                            | heed::MdbError::Invalid
                            | heed::MdbError::VersionMismatch
                    )
            ),
            IndexError::Tantivy { source, .. } => {
                matches!(source, tantivy::TantivyError::DataCorruption(_))
            }
            _ => false,
        }
    }

    /// The message for status and logs: the hint first when there is one, then the error.
    pub fn explained(&self) -> String {
        match self.hint() {
            Some(hint) => format!("{hint} ({self})"),
            None => self.to_string(),
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
