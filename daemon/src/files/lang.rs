//! Language detection by file name, and which files are never indexed by default.

use std::path::Path;

/// Every language name the index records, with the file extensions that have it.
const LANGUAGES: &[(&str, &[&str])] = &[
    ("rust", &["rs"]),
    ("python", &["py", "pyi", "pyx"]),
    ("javascript", &["js", "mjs", "cjs", "jsx"]),
    ("typescript", &["ts", "mts", "cts"]),
    ("tsx", &["tsx"]),
    ("vue", &["vue"]),
    ("svelte", &["svelte"]),
    ("go", &["go"]),
    ("java", &["java"]),
    ("c", &["c", "h"]),
    ("cpp", &["cc", "cpp", "cxx", "hpp", "hh", "hxx", "ipp"]),
    ("csharp", &["cs"]),
    ("ruby", &["rb"]),
    ("php", &["php"]),
    ("bash", &["sh", "bash", "zsh"]),
    ("markdown", &["md", "markdown"]),
    ("rst", &["rst"]),
    ("json", &["json"]),
    ("toml", &["toml"]),
    ("yaml", &["yaml", "yml"]),
    ("html", &["html", "htm"]),
    ("css", &["css", "scss", "sass", "less"]),
    ("sql", &["sql"]),
    ("kotlin", &["kt", "kts"]),
    ("swift", &["swift"]),
    ("scala", &["scala", "sc"]),
    ("dart", &["dart"]),
    ("objc", &["m", "mm"]),
    ("haskell", &["hs"]),
    ("elixir", &["ex", "exs"]),
    ("erlang", &["erl", "hrl"]),
    ("ocaml", &["ml"]),
    ("ocaml-interface", &["mli"]),
    ("lua", &["lua"]),
    ("r", &["r"]),
    ("julia", &["jl"]),
    ("zig", &["zig"]),
    ("hcl", &["tf", "hcl", "tfvars"]),
    ("protobuf", &["proto"]),
    ("graphql", &["graphql", "gql"]),
    ("xml", &["xml"]),
    ("make", &[]),
    ("dockerfile", &[]),
    ("cmake", &[]),
    ("text", &[]),
];

/// The language name for a relative path, from its extension or well-known file name.
pub fn language_of(path: &Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name {
        "Makefile" | "makefile" | "GNUmakefile" => return "make",
        "Dockerfile" => return "dockerfile",
        "CMakeLists.txt" => return "cmake",
        _ => {}
    }
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|(_, extensions)| extensions.contains(&ext.as_str()))
        .map_or("text", |(name, _)| name)
}

/// The language a user means by `given`: a language name (`python`) or one of its
/// extensions (`py`), any case. `None` when it names none of them.
pub fn resolve_language(given: &str) -> Option<&'static str> {
    let given = given.trim().to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find(|(name, extensions)| *name == given || extensions.contains(&given.as_str()))
        .map(|(name, _)| *name)
}

/// Every language name, for error messages and documentation.
pub fn language_names() -> Vec<&'static str> {
    LANGUAGES.iter().map(|(name, _)| *name).collect()
}

/// Files whose content is noise for code search (lock files, minified bundles, source maps)
/// or is known to be binary by its extension.
pub fn is_noise(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "cargo.lock" | "package-lock.json" | "yarn.lock" | "pnpm-lock.yaml" | "poetry.lock"
    ) || lower.ends_with(".min.js")
        || lower.ends_with(".min.css")
        || lower.ends_with(".map")
    {
        return true;
    }
    let ext = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    matches!(
        ext,
        "png"
            | "jpg"
            | "jpeg"
            | "gif"
            | "bmp"
            | "ico"
            | "webp"
            | "pdf"
            | "zip"
            | "gz"
            | "tgz"
            | "bz2"
            | "xz"
            | "zst"
            | "7z"
            | "tar"
            | "jar"
            | "war"
            | "class"
            | "o"
            | "a"
            | "so"
            | "dylib"
            | "dll"
            | "exe"
            | "bin"
            | "wasm"
            | "pyc"
            | "pyo"
            | "whl"
            | "woff"
            | "woff2"
            | "ttf"
            | "otf"
            | "eot"
            | "mp3"
            | "mp4"
            | "mov"
            | "avi"
            | "wav"
            | "flac"
            | "ogg"
            | "sqlite"
            | "db"
            | "mdb"
            | "npy"
            | "npz"
            | "pkl"
            | "parquet"
            | "onnx"
            | "pt"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_languages() {
        for (path, lang) in [
            ("src/main.rs", "rust"),
            ("a/b.py", "python"),
            ("x.tsx", "tsx"),
            ("Makefile", "make"),
            ("README.md", "markdown"),
            ("notes", "text"),
        ] {
            assert_eq!(language_of(Path::new(path)), lang, "{path}");
        }
    }

    #[test]
    fn languages_resolve_by_name_or_extension() {
        assert_eq!(resolve_language("Python"), Some("python"));
        assert_eq!(resolve_language("py"), Some("python"));
        assert_eq!(resolve_language("tsx"), Some("tsx"));
        assert_eq!(resolve_language("klingon"), None);
        assert!(language_names().contains(&"rust"));
    }
}
