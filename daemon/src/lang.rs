//! Language detection by file name, and which files are never indexed by default.

use std::path::Path;

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
    match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" | "pyx" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "tsx",
        "go" => "go",
        "java" => "java",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "ipp" => "cpp",
        "cs" => "csharp",
        "rb" => "ruby",
        "php" => "php",
        "sh" | "bash" | "zsh" => "bash",
        "md" | "markdown" => "markdown",
        "rst" => "rst",
        "json" => "json",
        "toml" => "toml",
        "yaml" | "yml" => "yaml",
        "html" | "htm" => "html",
        "css" | "scss" | "sass" | "less" => "css",
        "sql" => "sql",
        "kt" | "kts" => "kotlin",
        "swift" => "swift",
        "scala" => "scala",
        "lua" => "lua",
        "proto" => "protobuf",
        "xml" => "xml",
        _ => "text",
    }
}

/// Files that hold secrets (`.env*`, private keys, credentials): not indexed by default.
pub fn is_secret(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_dsa")
        || lower.starts_with("id_ecdsa")
        || lower.starts_with("id_ed25519")
        || lower == ".netrc"
        || lower == ".npmrc"
        || lower == ".pypirc"
        || lower == "credentials"
        || lower == "credentials.json"
        || lower.ends_with(".pem")
        || lower.ends_with(".key")
        || lower.ends_with(".p12")
        || lower.ends_with(".pfx")
        || lower.ends_with(".keystore")
        || lower.ends_with(".jks")
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
    fn secrets_are_recognised() {
        for path in [
            ".env",
            ".env.local",
            "id_rsa",
            "id_ed25519.pub",
            "server.pem",
            "tls.key",
        ] {
            assert!(is_secret(Path::new(path)), "{path}");
        }
        for path in ["env.rs", "keys.py", "environment.md"] {
            assert!(!is_secret(Path::new(path)), "{path}");
        }
    }
}
