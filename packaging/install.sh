#!/usr/bin/env bash
# Install amanmcpd, amanmcp and amanctl into ${CARGO_HOME:-~/.cargo}/bin, then index the
# directory you ran it from (or PATH) and list the AI clients to register it with.
#   bash install.sh [PATH]
# Where the binaries come from, first that applies:
#   - beside this script (an unpacked release archive: amanmcpd-<target>.tar.xz);
#   - this checkout, built with cargo (release profile, the lock file as committed);
#   - the latest release, through its shell installer (needs curl).
set -euo pipefail
target="$(cd "${1:-$PWD}" && pwd)"
here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
bindir="${CARGO_HOME:-$HOME/.cargo}/bin"
release_installer="https://github.com/amanmcp/amanmcp/releases/latest/download/amanmcpd-installer.sh"
binaries=(amanmcpd amanmcp amanctl)

have_all() { for b in "${binaries[@]}"; do [[ -x "$1/$b" ]] || return 1; done; }

if have_all "$here"; then
    from="$here"
    echo "installing the binaries beside this script ($from)"
elif [[ -f "$here/../Cargo.toml" ]] && command -v cargo >/dev/null; then
    repo="$(cd "$here/.." && pwd)"
    echo "building amanmcp from $repo (release; a few minutes on 2 cores)"
    (cd "$repo" && cargo build --release --locked -p amanmcpd)
    from="$repo/target/release"
elif command -v curl >/dev/null; then
    echo "downloading the latest release"
    curl --proto '=https' --tlsv1.2 -LsSf "$release_installer" | sh
    from="$bindir"
else
    echo "install.sh: no binaries beside it, no checkout with cargo, and no curl to download a release" >&2
    echo "  install Rust (https://rustup.rs) and run this script from a checkout of amanmcp" >&2
    exit 1
fi
mkdir -p "$bindir"
if [[ "$from" != "$bindir" ]]; then
    for b in "${binaries[@]}"; do
        install -m 0755 "$from/$b" "$bindir/$b"
    done
fi
echo "installed ${binaries[*]} into $bindir"
# A daemon from an older install would keep serving: restart it on the new binary.
"$bindir/amanctl" stop >/dev/null 2>&1 && sleep 0.5 || true
"$bindir/amanctl" index "$target"
echo
echo "Register it with your AI clients (their files edited in place; other servers kept):"
(cd "$target" && "$bindir/amanctl" setup) || true
echo "Start the daemon at login (optional; clients start it on demand):"
echo "  $bindir/amanctl service install"
echo "Check everything:  $bindir/amanctl doctor"
