//! A receiver that is a value another module defines at its top level, typed by that
//! module's declaration: imported by name, through a module imported whole, or (Python)
//! through `from pkg import module`; a TypeScript type name may start with `$`.

use super::{fixture, resolve};

const REGISTRY_PY: &str = "class Registry:\n    def add(self, x):\n        pass\n\n\nclass Other:\n    def add(self, x):\n        pass\n\n\nglobal_registry: Registry = make()\nplain = Registry()\n\n\ndef build():\n    local = Other()\n    return local\n";

#[test]
fn a_python_value_imported_from_its_module_is_typed_by_its_declaration_there() {
    let view = fixture(&[
        ("app/__init__.py", ""),
        ("app/registry.py", REGISTRY_PY),
        (
            "app/use.py",
            "from app.registry import global_registry, plain, local\nfrom app import registry\nimport app.registry as reg\n\n\ndef f():\n    global_registry.add(1)\n    plain.add(2)\n    registry.plain.add(3)\n    reg.global_registry.add(4)\n    local.add(5)\n",
        ),
    ]);
    for line in [7, 8, 9, 10] {
        assert_eq!(
            resolve(&view, "app/use.py", line, "add"),
            "app/registry.py:Registry.add (imported value's type)",
            "line {line}"
        );
    }
    // A local of one of the module's functions is not what it exports: no type from it.
    let local = resolve(&view, "app/use.py", 11, "add");
    assert!(local.starts_with("unresolved"), "{local}");
}

#[test]
fn a_typescript_const_imported_from_its_module_is_typed_by_its_declaration_there() {
    let view = fixture(&[
        (
            "src/reg.ts",
            "export class $Registry<M> {\n  add(x: number) {}\n}\nexport class Other {\n  add(x: number) {}\n}\nexport const globalRegistry: $Registry<Meta> = (globalThis as G).__registry!;\n",
        ),
        (
            "src/api.ts",
            "import * as registries from \"./reg.js\";\nimport { globalRegistry } from \"./reg\";\n\nexport function f() {\n  registries.globalRegistry.add(1);\n  globalRegistry.add(2);\n}\n",
        ),
    ]);
    for line in [5, 6] {
        assert_eq!(
            resolve(&view, "src/api.ts", line, "add"),
            "src/reg.ts:$Registry.add (imported value's type)",
            "line {line}"
        );
    }
}
