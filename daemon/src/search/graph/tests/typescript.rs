//! TypeScript scopes on small fixtures through the real chunker: a class header over
//! several lines, a module re-exported under a name, a local given what a call returns.

use super::{fixture, resolve};

#[test]
fn a_base_named_on_a_later_line_of_the_class_header_is_its_base() {
    let view = fixture(&[(
        "types.ts",
        "export class ZodType {\n  _getType(input: string): string {\n    return input;\n  }\n}\n\nexport class Other {\n  _getType(input: string): string {\n    return input;\n  }\n}\n\nexport class ZodObject<\n  T,\n  Keys = string,\n> extends ZodType {\n  _parse(input: string): string {\n    return this._getType(input);\n  }\n}\n",
    )]);
    assert_eq!(
        resolve(&view, "types.ts", 18, "_getType"),
        "types.ts:ZodType._getType (base class)"
    );
}

#[test]
fn a_name_imported_from_a_module_that_re_exports_a_module_under_it_is_that_module() {
    let view = fixture(&[
        (
            "core/util.ts",
            "export function normalizeParams(params: string): string {\n  return params;\n}\n",
        ),
        (
            "mini/util.ts",
            "export function normalizeParams(params: string): string {\n  return params;\n}\n",
        ),
        ("core/index.ts", "export * as util from \"./util.js\";\n"),
        (
            "classic/schemas.ts",
            "import { util } from \"../core/index.js\";\n\nexport function url(params: string): string {\n  return util.normalizeParams(params);\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "classic/schemas.ts", 4, "normalizeParams"),
        "core/util.ts:normalizeParams (module)"
    );
}

#[test]
fn a_local_given_what_a_call_returns_is_of_the_written_return_type() {
    let view = fixture(&[(
        "pool.ts",
        "export class Conn {\n  close(): void {}\n}\n\nexport class File {\n  close(): void {}\n}\n\nexport class Pool {\n  get(): Conn {\n    return new Conn();\n  }\n  async fetch(): Promise<Conn> {\n    return new Conn();\n  }\n}\n\nexport function release(pool: Pool): void {\n  const conn = pool.get();\n  conn.close();\n  const later = pool.fetch();\n  later.close();\n}\n",
    )]);
    assert_eq!(
        resolve(&view, "pool.ts", 20, "close"),
        "pool.ts:Conn.close (declared type)"
    );
    // A `Promise<Conn>` is no `Conn` until awaited: left ambiguous.
    let promised = resolve(&view, "pool.ts", 22, "close");
    assert!(promised.starts_with("ambiguous"), "{promised}");
}

/// trpc's observables: `interface Observable<..> extends Subscribable<..>` on a line of its
/// own, `subscribe` declared by the base alone, and another interface with the same methods.
#[test]
fn a_method_of_a_base_interface_is_found_through_the_declared_interface() {
    let view = fixture(&[
        (
            "types.ts",
            "export interface Unsubscribable {\n  unsubscribe(): void;\n}\ninterface Subscribable<TValue, TError> {\n  subscribe(observer: Partial<TValue>): Unsubscribable;\n}\nexport interface Observable<TValue, TError>\n  extends Subscribable<TValue, TError> {\n  pipe(): Observable<TValue, TError>;\n}\nexport interface Other {\n  subscribe(): void;\n  unsubscribe(): void;\n}\n",
        ),
        (
            "use.ts",
            "import type { Observable } from './types';\n\nexport function toPromise<TValue>(\n  observable: Observable<TValue, unknown>,\n) {\n  const obs$ = observable.subscribe({});\n  obs$.unsubscribe();\n}\n",
        ),
    ]);
    assert_eq!(
        resolve(&view, "use.ts", 6, "subscribe"),
        "types.ts:Subscribable.subscribe (declared type's base)"
    );
    // What it is written to return types the local it gives.
    assert_eq!(
        resolve(&view, "use.ts", 7, "unsubscribe"),
        "types.ts:Unsubscribable.unsubscribe (declared type)"
    );
}
