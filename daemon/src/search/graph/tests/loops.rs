//! A loop's element typed as its collection is (`bindings`' `for` rule): Python's
//! `for r in self.resources` with `resources: list[Resource]`, Rust's `for f in fields`
//! with `fields: &[Field]`, `&self.fields`, `fields.iter()`.

use super::{fixture, resolve};

#[test]
fn a_python_loop_element_is_typed_by_its_collections_declaration() {
    let view = fixture(&[(
        "urls.py",
        "class Resource:\n    def freeze(self):\n        pass\n\nclass Route:\n    def freeze(self):\n        pass\n\nclass Router:\n    def __init__(self):\n        self._resources: list[Resource] = []\n\n    def freeze(self, routes: list[Route]):\n        for resource in self._resources:\n            resource.freeze()\n        for route in routes:\n            route.freeze()\n        for other in range(3):\n            other.freeze()\n",
    )]);
    let at = |line| resolve(&view, "urls.py", line, "freeze");
    assert_eq!(at(15), "urls.py:Resource.freeze (declared type)");
    assert_eq!(at(17), "urls.py:Route.freeze (declared type)");
    // What a loop over an untyped value holds is not known.
    assert!(at(19).starts_with("ambiguous: "), "{}", at(19));
}

#[test]
fn a_rust_loop_element_is_typed_by_its_collection_or_its_iter() {
    let view = fixture(&[(
        "src/lib.rs",
        "pub struct Field;\nimpl Field {\n    pub fn skip(&self) -> bool { false }\n}\npub struct Variant;\nimpl Variant {\n    pub fn skip(&self) -> bool { false }\n}\npub struct Container {\n    fields: Vec<Field>,\n}\nimpl Container {\n    fn check(&self, variants: &[Variant]) {\n        for field in &self.fields {\n            field.skip();\n        }\n        for variant in variants.iter() {\n            variant.skip();\n        }\n    }\n}\n",
    )]);
    let at = |line| resolve(&view, "src/lib.rs", line, "skip");
    assert_eq!(at(15), "src/lib.rs:Field::skip (declared type)");
    assert_eq!(at(18), "src/lib.rs:Variant::skip (declared type)");
}

#[test]
fn an_element_taken_by_subscript_is_typed_as_its_collection_is() {
    let view = fixture(&[
        (
            "src/lib.rs",
            "pub struct Attrs;\nimpl Attrs {\n    pub fn skip(&self) -> bool { false }\n}\npub struct Other;\nimpl Other {\n    pub fn skip(&self) -> bool { false }\n}\npub struct Field {\n    pub attrs: Attrs,\n}\npub struct Variant {\n    pub fields: Vec<Field>,\n}\nfn style(variant: &Variant) -> bool {\n    variant.fields[0].attrs.skip()\n}\n",
        ),
        (
            "app.py",
            "class Handler:\n    def run(self):\n        pass\n\nclass Job:\n    def run(self):\n        pass\n\nclass App:\n    def __init__(self):\n        self.handlers: dict[str, Handler] = {}\n\n    def dispatch(self, name):\n        self.handlers[name].run()\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "src/lib.rs", 16, "skip"),
        "src/lib.rs:Attrs::skip (declared type)"
    );
    assert_eq!(
        resolve(&view, "app.py", 14, "run"),
        "app.py:Handler.run (declared type)"
    );
}

#[test]
fn a_rust_local_is_typed_by_what_the_called_function_is_written_to_return() {
    let view = fixture(&[(
        "src/lib.rs",
        "pub struct Conn;\nimpl Conn {\n    pub fn close(&self) {}\n}\npub struct File;\nimpl File {\n    pub fn close(&self) {}\n}\npub struct Pool;\nimpl Pool {\n    pub fn get(&self) -> Option<Conn> {\n        None\n    }\n    fn drain(&self) -> Result<(), ()> {\n        let conn = self.get().unwrap();\n        conn.close();\n        let file = open()?;\n        file.close();\n        let other = self.get().map(|c| c);\n        other.close();\n        Ok(())\n    }\n}\nfn open() -> Result<File, ()> {\n    Ok(File)\n}\n",
    )]);
    let at = |line| resolve(&view, "src/lib.rs", line, "close");
    assert_eq!(at(16), "src/lib.rs:Conn::close (declared type)");
    assert_eq!(at(18), "src/lib.rs:File::close (declared type)");
    // `map` is nobody's in the project: what it returns is not known.
    assert!(at(20).starts_with("ambiguous: "), "{}", at(20));
}
