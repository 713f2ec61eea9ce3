//! Finds the bundled model's files: the `assets` folder of the `pocket-encoder` crate this
//! package depends on, wherever cargo keeps its sources. The crate keeps its weights private;
//! this package reads the same bytes to run the model many texts at a time.
//!
//! Looked for, in order: cargo's registry sources (`$CARGO_HOME/registry/src/*/`, at the
//! version the lock file pins), then where `cargo metadata` says the package is (vendored or
//! other sources), offline first. `cargo metadata` lists every package of the workspace, so
//! it may need ones a partial build has not downloaded: the registry is asked first.

use std::path::{Path, PathBuf};
use std::process::Command;

const FILES: [&str; 3] = ["model.safetensors", "shapes.json", "tokenizer.json"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let assets = in_registry(&manifest)
        .or_else(|| by_metadata(&manifest, true))
        .or_else(|| by_metadata(&manifest, false))
        .expect(
            "cannot find the pocket-encoder crate's assets (model.safetensors, shapes.json, \
             tokenizer.json): neither in cargo's registry sources nor where `cargo metadata` \
             puts the package",
        );
    for file in FILES {
        println!("cargo:rerun-if-changed={}", assets.join(file).display());
    }
    println!(
        "cargo:rustc-env=AMANMCP_ENCODER_ASSETS={}",
        assets.display()
    );
}

fn complete(assets: PathBuf) -> Option<PathBuf> {
    FILES
        .iter()
        .all(|file| assets.join(file).is_file())
        .then_some(assets)
}

/// `$CARGO_HOME/registry/src/<registry>/pocket-encoder-<locked version>/assets`.
fn in_registry(manifest: &Path) -> Option<PathBuf> {
    let lock = manifest.ancestors().find_map(|dir| {
        let path = dir.join("Cargo.lock");
        std::fs::read_to_string(&path).ok().inspect(|_| {
            println!("cargo:rerun-if-changed={}", path.display());
        })
    })?;
    let version = lock
        .split("[[package]]")
        .find(|entry| entry.contains("name = \"pocket-encoder\""))?
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))?
        .trim_end_matches('"')
        .to_string();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))?;
    let mut registries: Vec<PathBuf> = std::fs::read_dir(home.join("registry").join("src"))
        .ok()?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .collect();
    registries.sort();
    registries.into_iter().find_map(|registry| {
        complete(
            registry
                .join(format!("pocket-encoder-{version}"))
                .join("assets"),
        )
    })
}

/// Where `cargo metadata` says the `pocket-encoder` package is.
fn by_metadata(manifest: &Path, offline: bool) -> Option<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = std::env::var("TARGET").ok()?;
    let mut command = Command::new(cargo);
    command.args([
        "metadata",
        "--format-version",
        "1",
        "--filter-platform",
        &target,
    ]);
    if offline {
        command.arg("--offline");
    }
    let output = command
        .arg("--manifest-path")
        .arg(manifest.join("Cargo.toml"))
        .output()
        .ok()?;
    if !output.status.success() {
        println!(
            "cargo:warning=`cargo metadata` failed: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        return None;
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    let package = metadata["packages"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == "pocket-encoder")?;
    let manifest_path = PathBuf::from(package["manifest_path"].as_str()?);
    complete(manifest_path.parent()?.join("assets"))
}
