//! Python values typed by return annotations and by attributes' declarations
//! (`graph::python`), on small fixtures through the real chunker.

use super::{fixture, resolve};

/// Two classes with a `drain`, so an untyped receiver is ambiguous between them.
pub(super) const WRITERS: &str = "class Writer:\n    async def drain(self):\n        pass\n\nclass Other:\n    async def drain(self):\n        pass\n";

#[test]
fn a_local_is_typed_by_what_the_called_definition_is_annotated_to_return() {
    let view = fixture(&[
        ("writers.py", WRITERS),
        (
            "response.py",
            "from writers import Writer\n\ndef connect() -> \"Writer | None\":\n    pass\n\ndef plain():\n    pass\n\nclass Response:\n    async def _start(self, request) -> Writer:\n        pass\n\n    async def send(self, request):\n        writer = await self._start(request)\n        await writer.drain()\n        conn = connect()\n        conn.drain()\n        other = plain()\n        other.drain()\n",
        ),
    ]);
    let at = |line| resolve(&view, "response.py", line, "drain");
    // A method of the enclosing class, awaited; a function of the file.
    assert_eq!(at(15), "writers.py:Writer.drain (declared type)");
    assert_eq!(at(17), "writers.py:Writer.drain (declared type)");
    // A callee with no annotation says nothing.
    assert_eq!(
        at(19),
        "ambiguous: writers.py:Other.drain, writers.py:Writer.drain"
    );
}

#[test]
fn an_attribute_is_typed_by_its_declaration_or_property_up_the_bases() {
    let view = fixture(&[
        ("writers.py", WRITERS),
        (
            "request.py",
            "from writers import Writer\n\nclass Base:\n    _writer: Writer | None = None\n\n    @property\n    def writer(self) -> Writer:\n        return self._writer\n\nclass Request(Base):\n    pass\n\nclass Handler(Base):\n    async def handle(self, request: Request):\n        await request.writer.drain()\n        writer = self._writer\n        await writer.drain()\n",
        ),
    ]);
    let at = |line| resolve(&view, "request.py", line, "drain");
    // A property of the parameter's class's base; a field declared in the own class's base.
    assert_eq!(at(15), "writers.py:Writer.drain (declared type)");
    assert_eq!(at(17), "writers.py:Writer.drain (declared type)");
}

#[test]
fn a_generic_bases_type_arguments_are_no_bases() {
    let view = fixture(&[
        (
            "routers.py",
            "class Router:\n    def freeze(self):\n        pass\n\nclass Resource:\n    def freeze(self):\n        pass\n",
        ),
        (
            "urls.py",
            "from routers import Router, Resource\nfrom typing import Mapping\n\nclass Dispatcher(Router, Mapping[str, Resource]):\n    def freeze(self):\n        super().freeze()\n",
        ),
    ]);
    // `super()` reaches `Router`, the base; `Resource` is only `Mapping`'s argument.
    assert_eq!(
        resolve(&view, "urls.py", 6, "freeze"),
        "routers.py:Router.freeze (base class)"
    );
}

#[test]
fn an_imported_class_named_as_a_receiver_is_the_class_not_a_module() {
    let view = fixture(&[
        (
            "base.py",
            "class BaseProtocol:\n    def __init__(self, loop):\n        pass\n",
        ),
        (
            "proto.py",
            "from base import BaseProtocol\nfrom os import path\n\nclass Handler(BaseProtocol):\n    def __init__(self, loop):\n        BaseProtocol.__init__(self, loop=loop)\n        path.join(loop)\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "proto.py", 6, "__init__"),
        "base.py:BaseProtocol.__init__ (named type)"
    );
    // A module imported from outside stays outside.
    assert_eq!(
        resolve(&view, "proto.py", 7, "join"),
        "unresolved: imported from `os.path`"
    );
}

#[test]
fn a_with_or_except_alias_is_typed_by_its_value() {
    let view = fixture(&[
        ("writers.py", WRITERS),
        (
            "use.py",
            "from writers import Writer, Other\n\nclass Failed(Exception):\n    def drain(self):\n        pass\n\ndef go(factory):\n    with Writer() as w:\n        w.drain()\n    try:\n        pass\n    except Failed as e:\n        e.drain()\n    with factory() as f:\n        f.drain()\n",
        ),
    ]);
    let at = |line| resolve(&view, "use.py", line, "drain");
    assert_eq!(at(9), "writers.py:Writer.drain (declared type)");
    assert_eq!(at(13), "use.py:Failed.drain (declared type)");
    // What an untyped factory makes is not known.
    assert!(at(15).starts_with("ambiguous: "), "{}", at(15));
}
