#!/usr/bin/env bash
# Build amanmcp from this checkout, install amanmcpd, amanmcp and amanctl into
# ${CARGO_HOME:-~/.cargo}/bin, then index the directory you ran it from.
#   bash /path/to/amanmcp/packaging/install.sh          # index the current directory
#   bash /path/to/amanmcp/packaging/install.sh PATH     # index PATH
set -euo pipefail
target="$(cd "${1:-$PWD}" && pwd)"
repo="$(cd "$(dirname "$0")/.." && pwd)"
bindir="${CARGO_HOME:-$HOME/.cargo}/bin"
(cd "$repo" && cargo build --release --locked -p amanmcpd -p amanmcp)
mkdir -p "$bindir"
for b in amanmcpd amanmcp amanctl; do
    install -m 0755 "$repo/target/release/$b" "$bindir/$b"
done
echo "installed amanmcpd, amanmcp and amanctl into $bindir"
# A daemon from an older install would keep serving: restart it on the new binary.
"$bindir/amanctl" stop >/dev/null 2>&1 && sleep 0.5 || true
"$bindir/amanctl" index "$target"
echo
echo "Register it with your AI clients (their files edited in place; other servers kept):"
(cd "$target" && "$bindir/amanctl" setup) || true
echo "Start the daemon at login (optional; clients start it on demand):"
echo "  $bindir/amanctl service install"
echo "Check everything:  $bindir/amanctl doctor"
