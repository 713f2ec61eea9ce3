//! The daemon's memory budget (`AMANMCP_MEMORY_MB`, 1,024 by default): the one setting that
//! sizes what would otherwise grow with the work, so the daemon's own memory (its heaps, not
//! the index files it maps, which the kernel takes back when it needs them) does not grow
//! with a project's size. Each share is stated here; what uses it says so, and [`Gate`]
//! bounds bytes handed from one thread to another (vectors on their way to the writer). Not
//! under it: fixed costs (parsers, threads, the built-in model's weights, ~100 MB while
//! indexing). [`release_mapped_pages`] gives back the pages of an index's map that a pass or
//! a search left resident, so those do not stay counted either, and [`release_file_ranges`]
//! those of maps its caller holds (tantivy's segment files); [`mapped_resident_bytes`] says
//! how much of the mapped files is resident, which the registry bounds by
//! [`Budget::mapped_bytes`]. The lowest layer: it reads
//! the setting and its own process's maps, nothing else.

use std::sync::{Condvar, Mutex, OnceLock};

/// The budget when `AMANMCP_MEMORY_MB` is not set, in MB.
pub const DEFAULT_MB: usize = 1024;

/// The smallest budget honoured, in MB: below it the shares' floors (tantivy's least
/// indexing heap, the model's weights) exceed it.
pub const MIN_MB: usize = 64;

/// tantivy's least indexing heap per thread.
const TANTIVY_MIN_HEAP: usize = 15 << 20;

/// The daemon's budget (`AMANMCP_MEMORY_MB`, at least [`MIN_MB`]).
pub fn budget() -> Budget {
    static MB: OnceLock<usize> = OnceLock::new();
    Budget::of(*MB.get_or_init(|| {
        std::env::var("AMANMCP_MEMORY_MB")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(DEFAULT_MB)
    }))
}

/// A memory budget and its shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    mb: usize,
}

impl Budget {
    /// A budget of `mb` MB (at least [`MIN_MB`]).
    pub fn of(mb: usize) -> Budget {
        Budget { mb: mb.max(MIN_MB) }
    }

    /// The budget in MB.
    pub fn mb(self) -> usize {
        self.mb
    }

    /// Word vectors the built-in embedder holds: 5/32 of the budget (160 MB by default).
    pub fn word_bytes(self) -> usize {
        self.mb * 5 / 32 * 1_000_000
    }

    /// tantivy's indexing heap for a project's writer: a sixteenth of the budget (64 MB by
    /// default), at least the 15 MB per indexing thread tantivy requires.
    pub fn writer_heap_bytes(self, threads: usize) -> usize {
        ((self.mb << 20) / 16).max(TANTIVY_MIN_HEAP * threads.max(1))
    }

    /// Files a project's writer stages before it commits: 2,000 by default, in proportion
    /// to the budget, at least 100 (their chunks' text and records wait in memory until
    /// then).
    pub fn staged_files(self) -> usize {
        (self.mb * 2000 / DEFAULT_MB).max(100)
    }

    /// Bytes of vectors a project's writer stages before it commits: a thirty-second of the
    /// budget (32 MB by default; 80,000 vectors of 384 dimensions), at least 4 MB.
    pub fn staged_vector_bytes(self) -> usize {
        ((self.mb << 20) / 32).max(4 << 20)
    }

    /// Bytes of vectors on their way to a project's writer, queued or staged: twice what it
    /// stages before a commit, so the embedder works on while the writer commits.
    pub fn vector_bytes_in_flight(self) -> usize {
        2 * self.staged_vector_bytes()
    }

    /// Bytes of int8 vectors a project may hold in memory to be searched exactly instead
    /// of through its graph: a sixty-fourth of the budget (16 MB by default: 40,000 chunks
    /// of 384 dimensions). Each loaded project small enough holds its own copy.
    pub fn exact_vector_bytes(self) -> usize {
        (self.mb << 20) / 64
    }

    /// Bytes of sign bits (and chunk ids) a project may hold in memory to be searched by a
    /// scan of them, with no graph, once its int8 vectors are too many for
    /// [`Budget::exact_vector_bytes`]: a thirty-second of the budget (32 MB by default:
    /// 599,186 chunks of 384 dimensions at 56 bytes each).
    pub fn exact_sign_bytes(self) -> usize {
        (self.mb << 20) / 32
    }

    /// Bytes of resolved mentions the code graph keeps per loaded project between requests
    /// (`search::graph::memo`): a thirty-second of the budget (32 MB by default).
    pub fn graph_memo_bytes(self) -> usize {
        (self.mb << 20) / 32
    }

    /// Bytes of mapped files the daemon may hold resident before it gives its indexes' maps
    /// back ([`mapped_resident_bytes`]): half the budget (512 MB by default; its own memory
    /// peaked at ~320 MB at 55,000 files), at least 96 MB (the daemon's binary and libraries
    /// are ~40 MB of it). Each time they are given back, the next searches fault their
    /// pages in again, so the share is no smaller than it needs to be.
    pub fn mapped_bytes(self) -> usize {
        ((self.mb << 20) / 2).max(96 << 20)
    }

    /// Vectors one ANN graph holds before the next is opened: 128 per MB of the budget
    /// (131,072 by default), at least 4,096. A graph's build holds its links in memory and
    /// dirties every page of it in one transaction.
    pub fn graph_vectors(self) -> u64 {
        (self.mb as u64 * 128).max(4096)
    }
}

/// Bytes held between producers and a consumer, bounded: [`Gate::acquire`] waits while
/// what is held and the new bytes would pass the bound (a lone request larger than the bound
/// passes once nothing else is held, so nothing waits forever); the consumer
/// [`Gate::release`]s what it has let go. Once [`Gate::close`]d (the consumer is gone)
/// nothing waits.
#[derive(Debug)]
pub struct Gate {
    bound: usize,
    state: Mutex<GateState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    held: usize,
    closed: bool,
}

impl Gate {
    /// A gate letting at most `bound` bytes be held.
    pub fn new(bound: usize) -> Gate {
        Gate {
            bound,
            state: Mutex::default(),
            freed: Condvar::new(),
        }
    }

    /// Hold `bytes` more, waiting until they fit.
    pub fn acquire(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !state.closed && state.held > 0 && state.held + bytes > self.bound {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.held += bytes;
    }

    /// `bytes` are no longer held.
    pub fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.held = state.held.saturating_sub(bytes);
        self.freed.notify_all();
    }

    /// The consumer is gone: nobody waits any more.
    pub fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.closed = true;
        self.freed.notify_all();
    }

    /// Bytes held now.
    pub fn held(&self) -> usize {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).held
    }
}

/// Bytes of the files this process maps that are resident now (the shared pages of
/// `/proc/self/statm`: the index files, the binary, shared libraries); `None` where there is
/// no such file. Cheap (one short read): asked before every request.
pub fn mapped_resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let shared: usize = statm.split_whitespace().nth(2)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(shared * usize::try_from(page).ok()?)
}

/// Give back the resident pages of `env`'s map: the read-only shared mappings of its file,
/// found in `/proc/self/maps`. The kernel keeps the pages in its page cache, so the next read
/// faults them back in without I/O; until then they no longer count in the daemon's resident
/// memory. An index's pages read by a pass, the vector graph's build or a search stayed
/// resident while the daemon idled: 244 MB of a 20,000-file project's LMDB map, as much as
/// the daemon's own memory. Linux only; elsewhere nothing.
pub fn release_mapped_pages(env: &heed::Env) {
    #[cfg(target_os = "linux")]
    {
        // `path` is canonical, as `/proc/self/maps` names files.
        let file = env.path().join("data.mdb");
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for (start, end) in read_only_shared_mappings(&maps, &file) {
            // SAFETY: [start, end) is a read-only shared mapping of `env`'s file, which LMDB
            // unmaps only when the environment closes, and `env` is borrowed for the whole
            // call: the range cannot be unmapped and reused by another mapping meanwhile.
            // MADV_DONTNEED on a shared file mapping only unmaps its pages from this process;
            // the file's contents are untouched.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = env;
}

/// Give back the resident pages of the ranges `(file, start, len)`, each of a map of `file`
/// that the caller holds until this returns (tantivy's segment files, `index::lexical`). A
/// range is given back only if `/proc/self/maps` shows it inside a read-only shared mapping of
/// its file; anything else (a copy in the heap, a file read rather than mapped) is left alone.
/// Linux only; elsewhere nothing.
pub fn release_file_ranges(ranges: &[(&std::path::Path, usize, usize)]) {
    #[cfg(target_os = "linux")]
    {
        if ranges.is_empty() {
            return;
        }
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for (start, end) in mapped_within(&maps, ranges) {
            // SAFETY: [start, end) lies in a read-only shared mapping of a file, which the
            // caller holds for the whole call, so it cannot be unmapped and reused meanwhile.
            // MADV_DONTNEED on a shared file mapping only unmaps its pages from this process;
            // the file's contents are untouched.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = ranges;
}

/// Of `ranges` `(file, start, len)`, those that start a `r--s` mapping of their own file in
/// `maps` and end inside it (a map's start is page-aligned, as `madvise` needs), as
/// `(start, end)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn mapped_within(maps: &str, ranges: &[(&std::path::Path, usize, usize)]) -> Vec<(usize, usize)> {
    let by_start: std::collections::HashMap<usize, (&std::path::Path, usize)> =
        read_only_shared(maps)
            .map(|(path, start, end)| (start, (path, end)))
            .collect();
    ranges
        .iter()
        .filter_map(|&(file, start, len)| {
            let end = start.checked_add(len)?;
            let &(path, to) = by_start.get(&start)?;
            (path == file && end <= to).then_some((start, end))
        })
        .collect()
}

/// The address ranges of `maps` (as `/proc/self/maps` writes it) mapping `file` read-only
/// and shared (`r--s`): LMDB's map without `MDB_WRITEMAP`. A deleted file's mapping (its path
/// followed by ` (deleted)`) is not `file`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_only_shared_mappings(maps: &str, file: &std::path::Path) -> Vec<(usize, usize)> {
    read_only_shared(maps)
        .filter(|&(path, _, _)| path == file)
        .map(|(_, start, end)| (start, end))
        .collect()
}

/// Every read-only shared (`r--s`) mapping of a file in `maps`: its path, start and end.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_only_shared(maps: &str) -> impl Iterator<Item = (&std::path::Path, usize, usize)> {
    maps.lines().filter_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        let (range, perms) = (fields.next()?, fields.next()?);
        // The path is the rest of the line from its first slash: no earlier field holds one.
        let path = &line[line.find('/')?..];
        if perms != "r--s" {
            return None;
        }
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        (start < end).then_some((std::path::Path::new(path), start, end))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    /// Acquire `bytes` of `gate` on a thread of its own; the receiver hears when it got them.
    fn acquire_elsewhere(gate: &Arc<Gate>, bytes: usize) -> std::sync::mpsc::Receiver<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        let gate = gate.clone();
        std::thread::spawn(move || {
            gate.acquire(bytes);
            let _ = tx.send(());
        });
        rx
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn an_index_s_pages_read_count_as_mapped_until_given_back() {
        use heed::types::{Bytes, U32};
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: the environment is opened once, by this test alone.
        let env = unsafe {
            heed::EnvOpenOptions::new()
                .map_size(256 << 20)
                .open(dir.path())
                .unwrap()
        };
        let wtxn = env.write_txn().unwrap();
        let db = env
            .create_databases_and_commit(wtxn, |opener, wtxn| -> heed::Result<_> {
                let db = opener.create_database::<U32<heed::byteorder::BE>, Bytes>(wtxn, None)?;
                Ok(heed::CommitOrAbort::<_, ()>::Commit(db))
            })
            .unwrap()
            .unwrap_commit();
        let mut wtxn = env.write_txn().unwrap();
        let value = vec![7u8; 64 << 10];
        for i in 0..1024u32 {
            db.put(&mut wtxn, &i, &value).unwrap();
        }
        wtxn.commit().unwrap();
        release_mapped_pages(&env);
        let before = mapped_resident_bytes().unwrap();
        // 64 MB read, a byte of every page.
        let rtxn = env.read_txn().unwrap();
        let mut sum = 0u64;
        for item in db.iter(&rtxn).unwrap() {
            sum += item
                .unwrap()
                .1
                .iter()
                .step_by(4096)
                .map(|b| u64::from(*b))
                .sum::<u64>();
        }
        assert_eq!(sum, 1024 * 16 * 7);
        let read = mapped_resident_bytes().unwrap();
        assert!(read >= before + (48 << 20), "{before} bytes, then {read}");
        release_mapped_pages(&env);
        let after = mapped_resident_bytes().unwrap();
        assert!(after + (48 << 20) <= read, "{read} bytes, then {after}");
    }

    #[test]
    fn a_gate_holds_producers_back_until_the_consumer_lets_bytes_go() {
        let gate = Arc::new(Gate::new(100));
        gate.acquire(60);
        gate.acquire(0);
        // Alone, more than the bound passes: nothing else is held to wait for.
        let lone = Gate::new(10);
        lone.acquire(50);
        assert_eq!(lone.held(), 50);

        let producer = acquire_elsewhere(&gate, 60);
        assert!(
            producer.recv_timeout(Duration::from_millis(200)).is_err(),
            "60 + 60 bytes passed a bound of 100"
        );
        gate.release(60);
        producer
            .recv_timeout(Duration::from_secs(5))
            .expect("the producer still waits after the bytes were let go");
        assert_eq!(gate.held(), 60);

        // A closed gate (its consumer gone) lets everyone through.
        let waiting = acquire_elsewhere(&gate, 90);
        assert!(waiting.recv_timeout(Duration::from_millis(200)).is_err());
        gate.close();
        waiting
            .recv_timeout(Duration::from_secs(5))
            .expect("a closed gate still holds a producer");
    }

    #[test]
    fn only_read_only_shared_mappings_of_the_file_are_given_back() {
        let maps = "\
7f0000000000-7f0000100000 r--s 00000000 08:01 42                         /data/projects/p a/lmdb/data.mdb
7f0000200000-7f0000300000 rw-s 00000000 08:01 42                         /data/projects/p a/lmdb/data.mdb
7f0000400000-7f0000500000 r--s 00000000 08:01 43                         /data/projects/p a/lmdb/data.mdb (deleted)
7f0000600000-7f0000700000 r--p 00000000 08:01 42                         /data/projects/p a/lmdb/data.mdb
7f0000800000-7f0000900000 r--s 00000000 08:01 44                         /data/projects/other/lmdb/data.mdb
7f0000a00000-7f0000b00000 rw-p 00000000 00:00 0
";
        let file = std::path::Path::new("/data/projects/p a/lmdb/data.mdb");
        assert_eq!(
            read_only_shared_mappings(maps, file),
            vec![(0x7f00_0000_0000, 0x7f00_0010_0000)]
        );
    }

    #[test]
    fn only_ranges_starting_a_read_only_shared_map_of_their_file_are_given_back() {
        let maps = "\
7f0000000000-7f0000100000 r--s 00000000 08:01 42                         /idx/a.idx
7f0000200000-7f0000300000 r--s 00000000 08:01 43                         /idx/b.store
7f0000400000-7f0000500000 rw-p 00000000 00:00 0
7f0000600000-7f0000700000 r--s 00000000 08:01 44                         /idx/c.pos (deleted)
";
        let (a, b, c) = (
            Path::new("/idx/a.idx"),
            Path::new("/idx/b.store"),
            Path::new("/idx/c.pos"),
        );
        let ranges = [
            (a, 0x7f00_0000_0000, 0x10_0000), // a map, whole
            (b, 0x7f00_0020_0000, 0x1234),    // a map's start, a file shorter than its pages
            (a, 0x7f00_0020_0000, 0x1000),    // another file's map
            (b, 0x7f00_0020_1000, 0x1000),    // inside a map, not at its start
            (b, 0x7f00_0020_0000, 0x20_0000), // past the map's end
            (a, 0x7f00_0040_0000, 0x1000),    // the heap
            (c, 0x7f00_0060_0000, 0x1000),    // a deleted file's map
            (a, usize::MAX, 2),               // no range at all
        ];
        assert_eq!(
            mapped_within(maps, &ranges),
            vec![
                (0x7f00_0000_0000, 0x7f00_0010_0000),
                (0x7f00_0020_0000, 0x7f00_0020_1234)
            ]
        );
    }

    #[test]
    fn the_default_budget_gives_the_measured_defaults_and_a_small_one_less() {
        let default = Budget::of(DEFAULT_MB);
        assert_eq!(default.word_bytes(), 160_000_000);
        assert_eq!(default.writer_heap_bytes(1), 64 << 20);
        assert_eq!(default.staged_files(), 2000);
        assert_eq!(default.staged_vector_bytes(), 32 << 20);
        assert_eq!(default.vector_bytes_in_flight(), 64 << 20);
        assert_eq!(default.graph_vectors(), 131_072);
        assert_eq!(default.exact_vector_bytes(), 16 << 20);
        assert_eq!(default.exact_sign_bytes(), 32 << 20);
        assert_eq!(default.mapped_bytes(), 512 << 20);
        let small = Budget::of(128);
        assert_eq!(small.word_bytes(), 20_000_000);
        assert_eq!(small.writer_heap_bytes(1), 15 << 20);
        assert_eq!(small.writer_heap_bytes(2), 30 << 20);
        assert_eq!(small.staged_files(), 250);
        assert_eq!(small.staged_vector_bytes(), 4 << 20);
        assert_eq!(small.graph_vectors(), 16_384);
        assert_eq!(small.exact_vector_bytes(), 2 << 20);
        assert_eq!(small.mapped_bytes(), 96 << 20);
        assert_eq!(Budget::of(256).mapped_bytes(), 128 << 20);
        assert_eq!(Budget::of(1), Budget::of(MIN_MB));
    }
}
