//! Definitions nested in a function (`Spec::nests`): a reference there is enclosed by the
//! nested definition, as the compiler-grade gold has it, and a nested function still sees
//! its outer function's typed names, not a sibling's.

use super::python::WRITERS;
use super::{callers_in, fixture, resolve};

#[test]
fn a_call_in_a_nested_python_function_is_the_nested_functions() {
    let view = fixture(&[
        ("writers.py", WRITERS),
        (
            "send.py",
            "from writers import Writer\n\ndef save(x):\n    pass\n\ndef outer(w: Writer):\n    def inner():\n        save(1)\n        w.drain()\n    def sibling(other):\n        other.drain()\n    save(2)\n    return inner\n",
        ),
    ]);
    assert_eq!(
        callers_in(&view, "save", None),
        ["send.py:outer resolved", "send.py:outer.inner resolved"]
    );
    // The closure reads the outer function's parameter; the sibling's own is untyped.
    assert_eq!(
        resolve(&view, "send.py", 9, "drain"),
        "writers.py:Writer.drain (declared type)"
    );
    assert_eq!(
        resolve(&view, "send.py", 11, "drain"),
        "ambiguous: writers.py:Other.drain, writers.py:Writer.drain"
    );
}

/// serde's shape: a visitor type and its `impl` declared inside the function using them.
const RUST_VISITOR: &str = r#"pub trait SeqAccess {
    fn next_element(&mut self) -> Option<u8>;
}

pub trait MapAccess {
    fn next_element(&mut self) -> Option<u8>;
}

pub fn deserialize() {
    struct VecVisitor;

    impl VecVisitor {
        fn visit_seq<A>(self, mut seq: A)
        where
            A: SeqAccess,
        {
            seq.next_element();
        }
    }
}
"#;

#[test]
fn a_rust_impl_inside_a_function_encloses_its_methods_calls() {
    let view = fixture(&[("src/lib.rs", RUST_VISITOR)]);
    assert_eq!(
        resolve(&view, "src/lib.rs", 17, "next_element"),
        "src/lib.rs:SeqAccess::next_element (declared type)"
    );
    assert_eq!(
        callers_in(&view, "SeqAccess::next_element", None),
        ["src/lib.rs:deserialize::VecVisitor::visit_seq resolved"]
    );
}

#[test]
fn a_call_in_an_object_literals_method_is_the_methods_and_one_beside_its_methods_is_not_the_objects()
 {
    let view = fixture(&[(
        "handlers.ts",
        r#"export function getAccept(req: string): string {
  return req;
}

const jsonHandler = {
  async parse(opts: string) {
    return getAccept(opts);
  },
  toResult: async (r: string) => getAccept(r),
};

export function build(req: string) {
  const init = { accept: getAccept(req) };
  return init;
}

test("parses", () => {
  function helper() {
    return getAccept("x");
  }
});
"#,
    )]);
    assert_eq!(
        callers_in(&view, "getAccept", None),
        [
            "handlers.ts:build resolved",
            "handlers.ts:helper resolved",
            "handlers.ts:jsonHandler.parse resolved",
            "handlers.ts:jsonHandler.toResult resolved",
        ]
    );
}
