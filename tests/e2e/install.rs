//! The README's first command on a machine with the binaries: `bash install.sh` in an
//! unpacked release archive (`dist build` puts the script beside the three binaries)
//! installs them without a toolchain, indexes the directory and lists the AI clients.

use std::process::Command;

use amanmcp_tests::{Ran, TestEnv, bin};

#[test]
fn install_sh_beside_the_binaries_installs_them_and_indexes_without_cargo() {
    let env = TestEnv::new();
    let root = env.project("proj", &[("app.py", "def installed_marker():\n    pass\n")]);
    // An unpacked archive: the binaries and the script, nothing else.
    let archive = env.path().join("amanmcp-x86_64-unknown-linux-gnu");
    std::fs::create_dir_all(&archive).unwrap();
    for name in ["amanmcpd", "amanmcp", "amanctl"] {
        std::fs::copy(bin(name), archive.join(name)).unwrap();
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../packaging/install.sh");
    std::fs::copy(script, archive.join("install.sh")).unwrap();
    let cargo_home = env.path().join("cargo-home");
    let mut command = Command::new("bash");
    env.apply(&mut command);
    // No cargo on PATH: only the system's directories.
    command
        .arg(archive.join("install.sh"))
        .arg(&root)
        .env("CARGO_HOME", &cargo_home)
        .env("PATH", "/usr/bin:/bin");
    let ran = Ran::from(command.output().unwrap());
    assert!(ran.ok(), "{}", ran.text());
    assert!(ran.stdout.contains("beside this script"), "{}", ran.text());
    assert!(!ran.text().contains("building"), "{}", ran.text());
    for name in ["amanmcpd", "amanmcp", "amanctl"] {
        assert!(cargo_home.join("bin").join(name).is_file(), "{name}");
    }
    // Indexed and ready, then the clients offered (none on this machine).
    assert!(ran.stdout.contains("ready: 1 file,"), "{}", ran.text());
    assert!(ran.stdout.contains("No AI clients found"), "{}", ran.text());
    let found = env.amanctl_on(&root, &["search", "installed_marker"]);
    assert!(found.stdout.contains("app.py"), "{}", found.text());
    env.stop_daemon();
}
