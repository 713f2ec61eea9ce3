//! TypeScript's written return types: what `const x = this.make()` holds, as the graph
//! types a receiver by (`x.close()` reaches the `close` of the type `make` returns).

use crate::chunk::syntax::capitalised;

/// Generic types that are no single class of the project's (`Promise<Conn>` is not a
/// `Conn` until awaited, `Array<Conn>` never is).
const NOT_ONE_CLASS: &[&str] = &[
    "Promise",
    "Array",
    "ReadonlyArray",
    "Record",
    "Map",
    "Set",
    "Partial",
    "Readonly",
    "Required",
    "Pick",
    "Omit",
    "Iterable",
    "Iterator",
    "Generator",
    "Object",
    "Function",
];

/// The class a TypeScript function's `signature` says it returns (`make(): Conn {`,
/// `get(): Conn | undefined`, `of<T>(): Box<T>`: `Box`); none for a primitive, an object or
/// function type, a union of classes, a wrapper (`Promise<Conn>`) or no written type.
pub(super) fn returned_in(signature: &str) -> Option<String> {
    let open = signature.find('(')?;
    let rest = super::rust::after_parameters(signature, open)?
        .trim_start()
        .strip_prefix(':')?;
    // The type runs to the body, an arrow or the end of the declaration.
    let end = rest.find(['{', ';', '=']).unwrap_or(rest.len());
    let alternatives: Vec<&str> = rest[..end]
        .split('|')
        .map(str::trim)
        .filter(|a| !matches!(*a, "" | "null" | "undefined"))
        .collect();
    let [one] = alternatives.as_slice() else {
        return None;
    };
    let name = one.split('<').next()?.trim();
    let name = name.rsplit('.').next().unwrap_or(name);
    let plain = name
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '$'));
    (plain && capitalised(name) && !NOT_ONE_CLASS.contains(&name)).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::returned_in;

    #[test]
    fn a_written_return_type_names_one_class() {
        let cases = [
            ("  make(): Conn {", Some("Conn")),
            (
                "export function open(path: string): db.Conn | undefined {",
                Some("Conn"),
            ),
            ("  of<T>(value: T): Box<T> {", Some("Box")),
            ("  async fetch(): Promise<Conn> {", None),
            ("  size(): number {", None),
            ("  pair(): Conn | Pool {", None),
            ("  run(f: () => void) {", None),
            ("  params(input: Input): {", None),
        ];
        for (signature, want) in cases {
            assert_eq!(returned_in(signature).as_deref(), want, "{signature}");
        }
    }
}
