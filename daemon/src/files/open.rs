//! Opening a project's file to read it, safely against a tree that changes meanwhile: the
//! walk saw a regular file, but by the time it is read a directory on its path may have
//! become a symlink (to text outside the project) and the file a FIFO (a read waits for a
//! writer for ever) or a device (`/dev/zero`: a read never ends). [`open_beneath`] follows
//! no symlink at any component and [`read_regular`] reads only a regular file, never past a
//! limit. Indexing and serving both read through here.

use std::fs::File;
use std::path::Path;

/// Open `rel` under `root` one component at a time without following any symlink
/// (`openat` with `O_NOFOLLOW`), so swapping a directory for a symlink while we open cannot
/// lead outside the root. The root itself is canonical and trusted.
pub fn open_beneath(root: &Path, rel: &str) -> std::io::Result<std::fs::File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    let open_at = |dir: libc::c_int, name: &[u8], flags: libc::c_int| {
        let name = CString::new(name)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: `name` is a valid NUL-terminated string and `dir` an open descriptor (or
        // AT_FDCWD).
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: `fd` was just opened and nothing else owns it.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    let mut dir = open_at(
        libc::AT_FDCWD,
        root.as_os_str().as_bytes(),
        libc::O_RDONLY | libc::O_DIRECTORY,
    )?;
    let parts: Vec<&str> = rel.split('/').filter(|p| !p.is_empty()).collect();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(std::io::ErrorKind::InvalidInput.into());
    };
    for part in dirs {
        dir = open_at(
            dir.as_raw_fd(),
            part.as_bytes(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )?;
    }
    // O_NONBLOCK: a FIFO swapped in must not hang the read (it is refused below).
    let fd = open_at(
        dir.as_raw_fd(),
        file.as_bytes(),
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )?;
    Ok(std::fs::File::from(fd))
}

/// What [`read_regular`] found in a regular file.
#[derive(Debug, PartialEq, Eq)]
pub enum Contents {
    /// All its bytes.
    Bytes(Vec<u8>),
    /// More than the limit: the size seen.
    TooLarge(u64),
}

/// The bytes of the opened `file`, or that it holds more than `max`. The descriptor must be
/// a regular file (not a FIFO, socket or device: an `InvalidInput` error), and at most
/// `max + 1` bytes are read whatever it grows to meanwhile.
pub fn read_regular(file: File, max: u64) -> std::io::Result<Contents> {
    use std::io::Read;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > max {
        return Ok(Contents::TooLarge(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Ok(Contents::TooLarge(bytes.len() as u64));
    }
    Ok(Contents::Bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(root: &Path, rel: &str, max: u64) -> std::io::Result<Contents> {
        open_beneath(root, rel).and_then(|file| read_regular(file, max))
    }

    #[test]
    fn only_regular_files_beneath_the_root_are_read_and_never_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let name = std::ffi::CString::new(root.join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        // Neither call may block (a FIFO without a writer) or run on (a device).
        let (tx, rx) = std::sync::mpsc::channel();
        let at = root.to_path_buf();
        std::thread::spawn(move || {
            let fifo = read(&at, "fifo", 1 << 20).map(|_| ());
            let zero = read(Path::new("/dev"), "zero", 1 << 20).map(|_| ());
            let _ = tx.send((fifo, zero));
        });
        let (fifo, zero) = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading special files returns at once");
        assert!(fifo.is_err() && zero.is_err());
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.txt"), "0123456789").unwrap();
        assert_eq!(
            read(root, "src/a.txt", 10).unwrap(),
            Contents::Bytes(b"0123456789".to_vec())
        );
        assert_eq!(
            read(root, "src/a.txt", 9).unwrap(),
            Contents::TooLarge(10),
            "over the limit"
        );
        // No symlink is followed, at the end of the path or on the way.
        std::os::unix::fs::symlink(root.join("src/a.txt"), root.join("link.txt")).unwrap();
        assert!(read(root, "link.txt", 10).is_err());
        std::os::unix::fs::symlink(root.join("src"), root.join("linked")).unwrap();
        assert!(read(root, "linked/a.txt", 10).is_err());
    }
}
