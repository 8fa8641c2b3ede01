#!/bin/sh
# Writes inst/AUTHORS: the Rust crates bundled in src/rust/vendor.tar.xz with their authors, licences
# and repositories, read from the vendored Cargo.toml files (CRAN asks packages to credit them).
# Run by tools/vendor.sh; by hand: sh tools/authors.sh (reads src/rust/vendor, or unpacks the archive).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
vendor="$root/src/rust/vendor"
out="$root/inst/AUTHORS"
if [ ! -d "$vendor" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  tar -xJf "$root/src/rust/vendor.tar.xz" -C "$tmp"
  vendor="$tmp/vendor"
fi
mkdir -p "$root/inst"
{
  echo "Authors and licences of the Rust crates bundled with gpupc"
  echo "=========================================================="
  echo
  echo "gpupc's Rust code (src/rust/crates) is by the gpupc authors (GPL >= 2). The package bundles the"
  echo "following third-party crates in src/rust/vendor.tar.xz, each under its own licence, as declared"
  echo "in its Cargo.toml (the licence texts are inside the archive, in each crate's directory). Where a"
  echo "crate does not list its authors, they are the contributors of its repository."
  echo
  for toml in $(LC_ALL=C ls -d "$vendor"/*/Cargo.toml); do
    awk '
      /^\[/ { insec = ($0 == "[package]"); next }
      !insec { next }
      /^name *=/       { name = $0; sub(/^name *= *"/, "", name); sub(/".*/, "", name) }
      /^version *=/    { ver = $0; sub(/^version *= *"/, "", ver); sub(/".*/, "", ver) }
      /^license *=/    { lic = $0; sub(/^license *= *"/, "", lic); sub(/".*/, "", lic) }
      /^license-file *=/ { if (lic == "") { lic = $0; sub(/^license-file *= *"/, "see ", lic); sub(/".*/, "", lic) } }
      /^repository *=/ { repo = $0; sub(/^repository *= *"/, "", repo); sub(/".*/, "", repo) }
      /^authors *=/    { inauth = 1; line = $0; sub(/^authors *= */, "", line) }
      inauth && !/^authors *=/ { line = $0 }
      inauth {
        s = line
        while (match(s, /"[^"]*"/)) {
          a = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
          sub(/ *<[^>]*>/, "", a)
          auth = (auth == "" ? a : auth ", " a)
        }
        if (line ~ /\]/) inauth = 0
      }
      END {
        if (auth == "") auth = "the " name " developers"
        printf "%s %s\n    Authors: %s\n    License: %s\n", name, ver, auth, (lic == "" ? "unknown" : lic)
        if (repo != "") printf "    Repository: %s\n", repo
      }' "$toml"
  done
} > "$out"
echo "authors.sh: wrote inst/AUTHORS ($(grep -c '^    License' "$out") crates)"
