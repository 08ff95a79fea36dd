#!/bin/sh
# Installs herdr from a release manifest, with its SHA-256 checked before it is made
# executable (docs/releases.md).
#
#   curl -fsSL https://releases.herdr.dev/install.sh | sh
#   sh install.sh [--prefix DIR] [--channel stable|preview] [--releases-url URL]
#
# Installs to DIR/bin/herdr (default DIR: ~/.local), and the manual page that binary
# prints to DIR/share/man/man1/herdr.1. The same settings can come from HERDR_PREFIX,
# HERDR_CHANNEL and HERDR_RELEASES_URL. Nothing partial or unverified is ever left at
# DIR/bin/herdr: the download goes to a temporary file beside it and is renamed into
# place only after its checksum matched.
set -eu

prefix=${HERDR_PREFIX:-${HOME:?HOME is not set}/.local}
channel=${HERDR_CHANNEL:-stable}
releases=${HERDR_RELEASES_URL:-https://releases.herdr.dev}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a folder"; prefix=$2; shift 2 ;;
    --channel) [ $# -ge 2 ] || die "--channel needs stable or preview"; channel=$2; shift 2 ;;
    --releases-url) [ $# -ge 2 ] || die "--releases-url needs a URL"; releases=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
case "$channel" in
  stable | preview) ;;
  *) die "unknown channel $channel; the channels are stable and preview" ;;
esac

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=macos ;;
  *) die "herdr has no builds for $(uname -s)" ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) die "herdr has no builds for $(uname -m)" ;;
esac
platform="$os-$arch"

fetch() {
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --connect-timeout 10 --max-time 600 --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q --timeout=30 --tries=3 -O "$2" "$1"
  else
    die "neither curl nor wget is installed; install one of them and run this again"
  fi
}

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed; cannot verify the download"
  fi
}

bindir="$prefix/bin"
mandir="$prefix/share/man/man1"
mkdir -p "$bindir" || die "cannot create $bindir"
work=$(mktemp -d 2>/dev/null || mktemp -d -t herdr-install)
partial="$bindir/.herdr-install.$$"
partial_man="$mandir/.herdr.1.$$"
cleanup() {
  rm -rf "$work"
  rm -f "$partial" "$partial_man"
}
trap cleanup EXIT
trap 'cleanup; exit 130' HUP INT TERM

manifest_url="${releases%/}/$channel.json"
fetch "$manifest_url" "$work/manifest.json" || die "cannot download $manifest_url"
# The platform's entry: "linux-x86_64": {"url": ..., "sha256": ..., "size": ...} (its
# fields hold no braces), wherever it is in the file.
line=$(tr -d '\n' < "$work/manifest.json" | sed -n "s/.*\"$platform\": *{\([^}]*\)}.*/\1/p")
[ -n "$line" ] || die "$manifest_url has no build for $platform"
version=$(tr -d '\n' < "$work/manifest.json" | sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')
[ -n "$version" ] || die "$manifest_url names no version; is it a herdr release manifest?"
url=$(printf '%s\n' "$line" | sed -n 's/.*"url": *"\([^"]*\)".*/\1/p')
want=$(printf '%s\n' "$line" | sed -n 's/.*"sha256": *"\([^"]*\)".*/\1/p' | tr 'A-F' 'a-f')
[ -n "$url" ] || die "$manifest_url gives no URL for $platform"
case "$want" in
  '' | *[!0-9a-f]*) die "$manifest_url gives no valid SHA-256 for $platform; refusing to install" ;;
esac
[ ${#want} -eq 64 ] || die "$manifest_url gives a malformed SHA-256 for $platform; refusing to install"

echo "downloading herdr $version for $platform"
fetch "$url" "$partial" || die "cannot download $url"
got=$(sha256 "$partial")
if [ "$got" != "$want" ]; then
  die "checksum mismatch for $url (got $got, expected $want); nothing was installed"
fi
chmod 755 "$partial"
installed=$("$partial" --version 2>/dev/null) || die "the downloaded herdr does not run on this machine; nothing was installed"
mv -f "$partial" "$bindir/herdr"
echo "installed $installed at $bindir/herdr"

# The manual page, as the binary just verified prints it (a release without `herdr man`
# has none to install).
if "$bindir/herdr" man > "$work/herdr.1" 2>/dev/null && [ -s "$work/herdr.1" ]; then
  if mkdir -p "$mandir" && cp "$work/herdr.1" "$partial_man" &&
    mv -f "$partial_man" "$mandir/herdr.1"; then
    echo "installed its manual page at $mandir/herdr.1 (man herdr)"
  else
    echo "note: could not write $mandir/herdr.1; herdr itself is installed"
  fi
fi
case ":${PATH:-}:" in
  *":$bindir:"*) ;;
  *) echo "note: $bindir is not on your PATH; add it, e.g.: echo 'export PATH=\"$bindir:\$PATH\"' >> ~/.profile" ;;
esac
