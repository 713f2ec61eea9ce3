//! Whether a project's index on disk is safe to open, found before the daemon maps it.
//!
//! LMDB maps its file: a file cut short kills whichever process reads a page past its end
//! (SIGBUS), and damaged pages can send a reader anywhere, so a bad index must never be read
//! first by the daemon that serves every other project too. Before a project's index is
//! opened, [`damage`]:
//! 1. compares LMDB's file against its own metadata, read with plain reads (the last page
//!    its newest meta page names should lie inside the file: a suspicion the next step
//!    settles, since LMDB may leave freed tail pages unwritten);
//! 2. has a separate process ([`CHECK_ARG`], the daemon's own binary, set by
//!    [`set_checker`]) read every record of every LMDB database and every tantivy file's
//!    checksum, and count tantivy's documents against LMDB's chunks ([`check`]). If that
//!    process dies, fails or hangs, the index is damaged.
//!
//! A damaged index is moved aside ([`set_aside`]) and rebuilt from the files; the project's
//! status says so.
//!
//! The second step reads the whole index (0.4 s at 23,000 files, seconds at 55,000), on
//! every first request after the daemon starts. An index this daemon closed whole needs
//! none of it: when a project is let go after its writer's last commit, [`mark_closed_whole`]
//! records every index file's length, inode and times; the next open takes the mark away
//! before it maps anything ([`take_closed_whole`]) and skips the reading process when the
//! files are still as recorded. Any write to them since (a damaged file, a file cut short
//! or deleted) changes what was recorded, and a daemon that dies while a project is open
//! leaves no mark, so the next open reads the index as before.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::index::lexical::Lexical;
use crate::index::store::Store;

/// The daemon binary's argument that checks one index directory and exits.
pub const CHECK_ARG: &str = "--check-index";

/// How long the checking process may take before the index counts as damaged.
const CHECK_TIMEOUT: Duration = Duration::from_secs(600);

static CHECKER: OnceLock<PathBuf> = OnceLock::new();

/// The program that runs [`check`] when given [`CHECK_ARG`] (the daemon's binary). Without
/// one, only the LMDB file's metadata is checked.
pub fn set_checker(program: PathBuf) {
    let _ = CHECKER.set(program);
}

/// What is wrong with the index in `dir` (a project directory), if anything.
///
/// A data file shorter than its meta page says is only a suspicion: LMDB leaves the last
/// pages of a transaction unwritten when they were freed before it committed (seen: one
/// page short after a vector commit). The reading process decides: it reads every page in
/// use, and dies on one past the file's end. Without one, the suspicion stands.
///
/// `closed_whole` ([`take_closed_whole`]): the files are as this daemon left them when it
/// closed the index whole, so only the metadata is checked.
pub fn damage(dir: &Path, closed_whole: bool) -> Option<String> {
    let file = dir.join("lmdb").join("data.mdb");
    let short = lmdb_file_damage(&file);
    if closed_whole && short.is_none() {
        tracing::info!(dir = %dir.display(), "the index is as it was closed whole; not read again");
        return None;
    }
    let Some(program) = CHECKER.get() else {
        return short;
    };
    if !file.exists() {
        return None;
    }
    match check_in_child(program, dir)? {
        // The reader died past the end: say why in the file's own terms.
        Failed::Killed(_) if short.is_some() => short,
        Failed::Killed(signal) => Some(format!(
            "reading it killed the reading process (signal {signal})"
        )),
        Failed::Said(reason) => Some(reason),
    }
}

/// How the checking process found the index damaged.
enum Failed {
    /// It died of this signal (a page past the file's end, a pointer gone astray).
    Killed(i32),
    /// It said why, or ran out of time.
    Said(String),
}

/// Run [`check`] on `dir` in a child process running `program`: `None` when the index
/// read whole (or the check could not be run).
fn check_in_child(program: &Path, dir: &Path) -> Option<Failed> {
    let spawned = std::process::Command::new(program)
        .arg(CHECK_ARG)
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .env("AMANMCP_LOG", "error")
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            // Not being able to check is not damage: the daemon's own reads still guard.
            tracing::warn!(error = %e, "cannot start the index check");
            return None;
        }
    };
    // The pipe holds what a failing check prints (a line or two) without blocking it.
    let mut stderr = child.stderr.take();
    let deadline = Instant::now() + CHECK_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Some(Failed::Said(format!(
                    "reading it did not finish within {} s",
                    CHECK_TIMEOUT.as_secs()
                )));
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot wait for the index check");
                return None;
            }
        }
    };
    if status.success() {
        return None;
    }
    let mut said = String::new();
    if let Some(stderr) = stderr.as_mut() {
        let _ = stderr.take(4096).read_to_string(&mut said);
    }
    let said = said.trim();
    use std::os::unix::process::ExitStatusExt;
    Some(match status.signal() {
        Some(signal) => Failed::Killed(signal),
        None if said.is_empty() => Failed::Said(format!("reading it failed ({status})")),
        None => Failed::Said(said.to_string()),
    })
}

/// Read every record of the index in `dir` (run by the checking process): LMDB's databases,
/// tantivy's checksums, and tantivy's documents against LMDB's chunks.
pub fn check(dir: &Path) -> Result<(), String> {
    let lmdb = dir.join("lmdb");
    let store = Store::open_to_check(&lmdb).map_err(|e| e.to_string())?;
    let tally = store.read_everything().map_err(|e| e.to_string())?;
    let docs = Lexical::check_files(&dir.join("tantivy")).map_err(|e| e.to_string())?;
    match docs {
        None if tally.files > 0 => Err(format!(
            "its keyword index is missing while {} files are recorded",
            tally.files
        )),
        // An interrupted commit leaves the two apart until it is undone on open.
        Some(docs) if tally.dirty == 0 && docs != tally.chunks => Err(format!(
            "its keyword index holds {docs} chunks, its records {}",
            tally.chunks
        )),
        _ => Ok(()),
    }
}

/// LMDB's data file against its newest meta page, read without mapping it: `None` when the
/// file is absent or whole.
fn lmdb_file_damage(file: &Path) -> Option<String> {
    let Ok(mut opened) = std::fs::File::open(file) else {
        return None;
    };
    let len = opened.metadata().ok()?.len();
    let mut head = vec![0u8; 2 * MAX_PAGE];
    let mut got = 0;
    while got < head.len() {
        match opened.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Some(format!("its data file cannot be read: {e}")),
        }
    }
    head.truncate(got);
    let Some(first) = Meta::parse(&head) else {
        return Some(format!(
            "its data file ({len} bytes) does not start with an LMDB meta page"
        ));
    };
    let second = head
        .get(first.page_size as usize..)
        .and_then(Meta::parse)
        .filter(|m| m.page_size == first.page_size);
    // LMDB uses the meta page of the newest transaction.
    let newest = match second {
        Some(second) if second.txnid > first.txnid => second,
        _ => first,
    };
    let needed = newest
        .last_page
        .checked_add(1)
        .and_then(|pages| pages.checked_mul(u64::from(newest.page_size)));
    match needed {
        Some(needed) if needed <= len => None,
        Some(needed) => Some(format!(
            "its data file is {len} bytes, but its pages reach {needed} (the file was cut short)"
        )),
        None => Some("its meta page names an impossible last page".to_string()),
    }
}

/// The largest page size LMDB uses (the system's page size; 64 KiB on some machines).
const MAX_PAGE: usize = 65536;

/// What an LMDB meta page says (64-bit layout: a 16-byte page header, then `MDB_meta`).
struct Meta {
    page_size: u32,
    last_page: u64,
    txnid: u64,
}

impl Meta {
    const MAGIC: u32 = 0xBEEF_C0DE;

    fn parse(page: &[u8]) -> Option<Meta> {
        let u32_at = |at: usize| Some(u32::from_le_bytes(page.get(at..at + 4)?.try_into().ok()?));
        let u64_at = |at: usize| Some(u64::from_le_bytes(page.get(at..at + 8)?.try_into().ok()?));
        if u32_at(16)? != Meta::MAGIC {
            return None;
        }
        // mm_dbs[FREE_DBI].md_pad holds the page size.
        let page_size = u32_at(40)?;
        if !(512..=MAX_PAGE as u32).contains(&page_size) || !page_size.is_power_of_two() {
            return None;
        }
        Some(Meta {
            page_size,
            last_page: u64_at(136)?,
            txnid: u64_at(144)?,
        })
    }
}

/// The mark a project's index directory holds while the index is closed whole.
const CLOSED_WHOLE: &str = "closed-whole";

/// What the index's files are now: LMDB's data file and every tantivy file (not its lock
/// files), each with its length, inode, and modification and change times (the change
/// time moves on every write and cannot be set back). `None` when one cannot be read.
fn fingerprint(dir: &Path) -> Option<String> {
    use std::fmt::Write;
    use std::os::unix::fs::MetadataExt;
    let mut out = String::new();
    let mut add = |path: &Path, name: &str| -> Option<()> {
        let m = std::fs::symlink_metadata(path).ok()?;
        let (mtime, ctime) = ((m.mtime(), m.mtime_nsec()), (m.ctime(), m.ctime_nsec()));
        writeln!(out, "{name} {} {} {mtime:?} {ctime:?}", m.len(), m.ino()).ok()
    };
    add(&dir.join("lmdb").join("data.mdb"), "lmdb/data.mdb")?;
    let tantivy = dir.join("tantivy");
    let mut names: Vec<String> = std::fs::read_dir(&tantivy)
        .ok()?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .ok()?;
    names.retain(|name| !name.ends_with(".lock"));
    names.sort();
    for name in names {
        add(&tantivy.join(&name), &format!("tantivy/{name}"))?;
    }
    Some(out)
}

/// Record that the index in `dir` was closed whole: called once its writer has made its
/// last commit and nothing writes to it any more.
pub fn mark_closed_whole(dir: &Path) {
    let Some(print) = fingerprint(dir) else {
        return;
    };
    let partial = dir.join(format!("{CLOSED_WHOLE}.partial"));
    let written = std::fs::write(&partial, print)
        .and_then(|()| std::fs::rename(&partial, dir.join(CLOSED_WHOLE)));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        tracing::warn!(dir = %dir.display(), error = %e, "cannot mark the index closed whole");
    }
}

/// Whether the index in `dir` is as this daemon closed it whole, taking the mark away (and
/// syncing its directory) before anything maps the index: an index that is open, or was
/// open when its daemon died, holds no mark.
pub fn take_closed_whole(dir: &Path) -> bool {
    let mark = dir.join(CLOSED_WHOLE);
    let Ok(recorded) = std::fs::read_to_string(&mark) else {
        return false;
    };
    let taken = std::fs::remove_file(&mark)
        .and_then(|()| std::fs::File::open(dir))
        .and_then(|d| d.sync_all());
    taken.is_ok() && fingerprint(dir).is_some_and(|now| now == recorded)
}

/// Move the damaged index in `dir` to `<data dir>/damaged/<its name>` (replacing an older
/// one of the same project), so it can be looked at but never opened again. Returns where
/// it went; when it cannot be moved it is deleted.
pub fn set_aside(dir: &Path) -> Option<PathBuf> {
    let name = dir.file_name()?;
    let aside_root = dir.parent()?.parent()?.join("damaged");
    let aside = aside_root.join(name);
    let _ = std::fs::remove_dir_all(&aside);
    let moved =
        std::fs::create_dir_all(&aside_root).is_ok() && std::fs::rename(dir, &aside).is_ok();
    if moved {
        Some(aside)
    } else {
        let _ = std::fs::remove_dir_all(dir);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_lmdb_file_is_found_without_mapping_it() {
        let dir = tempfile::tempdir().unwrap();
        let lmdb = dir.path().join("lmdb");
        {
            let store = Store::open(&lmdb).unwrap();
            store.initialise(dir.path()).unwrap();
        }
        let file = lmdb.join("data.mdb");
        assert_eq!(lmdb_file_damage(&file), None, "a fresh file is whole");
        let len = std::fs::metadata(&file).unwrap().len();
        let cut = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        cut.set_len(len - 4096).unwrap();
        let reason = lmdb_file_damage(&file).expect("a cut file is damaged");
        assert!(reason.contains("cut short"), "{reason}");
        cut.set_len(100).unwrap();
        assert!(lmdb_file_damage(&file).is_some());
        assert_eq!(lmdb_file_damage(&lmdb.join("absent")), None);
    }

    #[test]
    fn an_index_closed_whole_is_trusted_once_and_only_while_its_files_stay_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let lmdb = dir.path().join("lmdb");
        {
            let store = Store::open(&lmdb).unwrap();
            store.initialise(dir.path()).unwrap();
            Lexical::open(&dir.path().join("tantivy")).unwrap();
        }
        assert!(!take_closed_whole(dir.path()), "never marked");
        mark_closed_whole(dir.path());
        assert!(
            take_closed_whole(dir.path()),
            "unchanged since it was marked"
        );
        assert!(
            !take_closed_whole(dir.path()),
            "the open that trusts the mark takes it"
        );

        // Timestamps move in ticks of a few ms on some kernels: let one pass.
        let tick = || std::thread::sleep(std::time::Duration::from_millis(20));
        let file = lmdb.join("data.mdb");
        mark_closed_whole(dir.path());
        tick();
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, &bytes).unwrap();
        assert!(
            !take_closed_whole(dir.path()),
            "LMDB's file written since, at the same length"
        );

        mark_closed_whole(dir.path());
        tick();
        std::fs::remove_file(dir.path().join("tantivy").join("meta.json")).unwrap();
        assert!(!take_closed_whole(dir.path()), "a tantivy file gone since");
        assert!(
            !dir.path().join(CLOSED_WHOLE).exists(),
            "the mark is taken either way"
        );
    }
}
