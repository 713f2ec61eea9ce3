//! Rust receivers typed by a call written with a turbofish (`Vec::<u8>::with_capacity`).

use super::{fixture, resolve};

/// `Vec::<u8>::with_capacity(..)` returns the `Vec` its path names. Its `::<u8>` once left
/// an empty type name behind, and the search for that name's bounds never ended.
#[test]
fn a_turbofish_call_types_its_value_by_the_path_before_it() {
    // On a thread of its own: a resolution that never ends fails the test, not the run.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let view = fixture(&[(
            "src/lib.rs",
            "trait BufMut {\n    fn put_u8(&mut self, n: u8);\n}\nstruct Vec<T>(T);\nimpl<T> Vec<T> {\n    fn with_capacity(n: usize) -> Self { todo!() }\n}\nimpl BufMut for Vec<u8> {\n    fn put_u8(&mut self, n: u8) {}\n}\nstruct Other;\nimpl BufMut for Other {\n    fn put_u8(&mut self, n: u8) {}\n}\nfn fill<B: BufMut>(b: &mut B) {\n    let mut buf = Vec::<u8>::with_capacity(256);\n    buf.put_u8(1);\n}\n",
        )]);
        let _ = tx.send(resolve(&view, "src/lib.rs", 17, "put_u8"));
    });
    let resolved = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("the call's resolution ends");
    assert_eq!(resolved, "src/lib.rs:Vec::put_u8 (declared type)");
}
