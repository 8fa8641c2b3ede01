#!/usr/bin/env bash
# Vendors the Rust crates that src/rust/Cargo.lock needs, so that the package builds offline (CRAN's rule).
#
#   bash tools/vendor.sh
#
# Re-run it (and commit src/rust/vendor.tar.xz) whenever src/rust/Cargo.lock changes.
#
# It runs `cargo vendor --offline --locked` in src/rust, taking the crates from the source replacement
# configured on this machine (~/.cargo/config.toml pointing crates-io at a local vendored mirror),
# writes:
#   src/rust/vendor/            the crates, removed at the end (src/Makevars unpacks the archive)
#   src/rust/vendor-config.toml the source replacement the build uses (src/Makevars installs it as
#                               src/rust/.cargo/config.toml and overrides its directory "vendor" with
#                               the absolute path where it unpacked the archive)
#   src/rust/vendor.tar.xz      a reproducible archive of vendor/ (same Cargo.lock, same bytes)
#   inst/AUTHORS                the bundled crates' authors and licences (tools/authors.sh)
# Files inside the crates are kept as they are: cargo verifies them against .cargo-checksum.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
rust="$root/src/rust"
export PATH="$PATH:$HOME/.cargo/bin"
command -v cargo >/dev/null || { echo "vendor.sh: cargo not found" >&2; exit 1; }

cd "$rust"
rm -rf vendor
# --respect-source-config: read the crates from the configured (offline) source replacement.
log=$(mktemp)
if ! cargo vendor --offline --locked --respect-source-config --versioned-dirs vendor >/dev/null 2>"$log"; then
  cat "$log" >&2; rm -f "$log"; exit 1
fi
rm -f "$log"

cat > vendor-config.toml <<'EOF'
# Source replacement for the offline build: src/Makevars copies this file to rust/.cargo/config.toml
# (CARGO_HOME) and gives cargo the directory where it unpacked rust/vendor.tar.xz on the command
# line (tools/test.sh does the same). Written by tools/vendor.sh.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "vendor"
EOF

# Reproducible archive: fixed order, times, owners and modes; single-threaded xz.
tmp=$(mktemp "$rust/vendor.tar.xz.XXXXXX")
trap 'rm -f "$tmp"' EXIT
LC_ALL=C TZ=UTC XZ_OPT="-9e -T1" tar --sort=name --mtime='1970-01-01 00:00:00' \
  --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' --format=gnu \
  -cJf "$tmp" vendor
chmod 644 "$tmp"
mv "$tmp" vendor.tar.xz
trap - EXIT
sh "$root/tools/authors.sh"
rm -rf vendor

n=$(grep -c '^name = ' Cargo.lock)
size=$(wc -c < vendor.tar.xz)
sum=$(sha256sum vendor.tar.xz | cut -c1-16)
echo "vendor.sh: $n packages in Cargo.lock, src/rust/vendor.tar.xz = $size bytes ($((size / 1024)) KiB), sha256 $sum..."
