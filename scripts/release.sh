#!/bin/sh
# Builds a herdr release for this platform: the binary stamped with its version, and the
# channel's manifest naming it with its SHA-256 and size (docs/releases.md).
#
#   scripts/release.sh --channel stable|preview --version V --base-url URL --out DIR
#                      [--build N] [--binary PATH] [--notes TEXT]
#
# --version is X.Y.Z; on the preview channel the stamped version is X.Y.Z-preview.N
# (--build N, required there). --base-url is where DIR will be served from: artifact URLs
# in the manifest are <base-url>/<artifact>. --binary stamps an already built binary
# instead of running `cargo build --release` (which scripts/hot-code runs before, where
# valgrind and tmux are there, to lay out the code for this release). Writes DIR/herdr-<version>-<platform>,
# DIR/<channel>.json (one platform per line, which install.sh relies on) and the manual
# page DIR/herdr.1 (as the binary prints it). An existing manifest in DIR keeps its other
# platforms' entries if it is for the same version.
set -eu

channel='' version='' base_url='' out='' build='' binary='' notes=''
while [ $# -gt 0 ]; do
  case "$1" in
    --channel) channel=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --base-url) base_url=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --notes) notes=$2; shift 2 ;;
    *) echo "release.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for v in channel version base_url out; do
  eval "val=\${$v}"
  if [ -z "$val" ]; then
    echo "release.sh: --$(echo "$v" | tr _ -) is required" >&2
    exit 2
  fi
done
case "$version" in
  *[!0-9.]* | *..* | .* | *. | *.*.*.* ) echo "release.sh: --version must be X.Y.Z, got $version" >&2; exit 2 ;;
  *.*.*) ;;
  *) echo "release.sh: --version must be X.Y.Z, got $version" >&2; exit 2 ;;
esac
case "$channel" in
  stable) full=$version ;;
  preview)
    case "$build" in
      '' | *[!0-9]*) echo "release.sh: the preview channel needs --build N (a number)" >&2; exit 2 ;;
    esac
    full="$version-preview.$build" ;;
  *) echo "release.sh: --channel must be stable or preview" >&2; exit 2 ;;
esac

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=macos ;;
  *) echo "release.sh: unsupported OS $(uname -s)" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) echo "release.sh: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
platform="$os-$arch"

root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$binary" ]; then
  # The order of the code a server and a client run (build/hot-code.ld) is made again for
  # the code being released: a function an edit added or renamed since is otherwise
  # placed far from the others and keeps a block of code resident on its own.
  if command -v valgrind >/dev/null 2>&1 && command -v tmux >/dev/null 2>&1; then
    "$root/scripts/hot-code"
  else
    echo "release.sh: no valgrind or tmux here: build/hot-code.ld is used as committed" >&2
  fi
  (cd "$root" && cargo build --release --locked)
  binary=$("$root/scripts/built-herdr")
fi
mkdir -p "$out"
artifact="herdr-$full-$platform"

# Releases ship without debug info (the build keeps it for local profiling).
stripped="$out/.herdr-release.$$"
trap 'rm -f "$stripped"' EXIT
cp "$binary" "$stripped"
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$stripped" 2>/dev/null || cp "$binary" "$stripped"
fi
binary=$stripped

# The client/server protocol this source speaks (what `server status` reports).
protocol=$(sed -n 's/^pub const PROTOCOL_VERSION: u32 = \([0-9][0-9]*\);$/\1/p' "$root/src/protocol/mod.rs")
if [ -z "$protocol" ]; then
  echo "release.sh: cannot find PROTOCOL_VERSION in src/protocol/mod.rs" >&2
  exit 1
fi

python3 - "$binary" "$out/$artifact" "$full" "$channel" "$base_url" "$out/$channel.json" "$platform" "$notes" "$protocol" <<'PY'
import hashlib, json, os, sys

src, dst, full, channel, base, manifest_path, platform, notes, protocol = sys.argv[1:10]
data = open(src, "rb").read()
marker = b"HERDR-STAMP:" + b"\0" * 64
if data.count(marker) != 1:
    sys.exit(f"release.sh: {src} has no (or more than one) blank version stamp; build it from this repository")
if len(full.encode()) > 64:
    sys.exit("release.sh: the version is longer than the stamp")
i = data.index(marker) + len(b"HERDR-STAMP:")
stamped = data[:i] + full.encode().ljust(64, b"\0") + data[i + 64:]
tmp = dst + ".tmp"
with open(tmp, "wb") as f:
    f.write(stamped)
os.chmod(tmp, 0o755)
os.replace(tmp, dst)

protocol = int(protocol)
platforms = {}
if os.path.exists(manifest_path):
    try:
        old = json.load(open(manifest_path))
        if old.get("version") == full:
            platforms = old.get("platforms", {})
    except ValueError:
        pass
platforms[platform] = {
    "url": base.rstrip("/") + "/" + os.path.basename(dst),
    "sha256": hashlib.sha256(stamped).hexdigest(),
    "size": len(stamped),
}


def loads_libraries(elf):
    """Whether a 64-bit little-endian ELF names a program interpreter (is dynamic); one
    that cannot be read counts as dynamic."""
    if elf[:4] != b"\x7fELF" or elf[4:6] != b"\x02\x01" or len(elf) < 0x40:
        return True
    at, size, count = (int.from_bytes(elf[o:o + n], "little") for o, n in ((0x20, 8), (0x36, 2), (0x38, 2)))
    if at + count * size > len(elf):
        return True
    return any(int.from_bytes(elf[at + i * size:at + i * size + 4], "little") == 3 for i in range(count))


# Linked statically (.cargo/config.toml), the Linux binary needs no C library on the
# host: it is the musl hosts' too. (A dynamic one is not: an entry a static build of
# this version left is dropped.)
if platform.startswith("linux-"):
    if loads_libraries(stamped):
        platforms.pop(platform + "-musl", None)
    else:
        platforms[platform + "-musl"] = dict(platforms[platform])
lines = [
    "{",
    f'  "version": {json.dumps(full)},',
    f'  "protocol": {protocol},',
    f'  "channel": {json.dumps(channel)},',
    f'  "notes": {json.dumps(notes)},',
    '  "platforms": {',
]
items = sorted(platforms.items())
for n, (name, a) in enumerate(items):
    comma = "," if n + 1 < len(items) else ""
    lines.append(f"    {json.dumps(name)}: {json.dumps(a, separators=(', ', ': '))}{comma}")
lines += ["  }", "}"]
tmp = manifest_path + ".tmp"
with open(tmp, "w") as f:
    f.write("\n".join(lines) + "\n")
os.replace(tmp, manifest_path)
print(f"{dst}: herdr {full} for {platform}, {len(stamped)} bytes, sha256 {platforms[platform]['sha256']}")
print(f"{manifest_path}: {channel} manifest for {full}")
PY

# The manual page, for packagers and mirrors: the same on every platform. install.sh does
# not download it; it asks the binary it verified.
if ! "$out/$artifact" man > "$out/herdr.1.tmp"; then
  rm -f "$out/herdr.1.tmp"
  echo "release.sh: $out/$artifact cannot print its manual page (herdr man)" >&2
  exit 1
fi
mv -f "$out/herdr.1.tmp" "$out/herdr.1"
echo "$out/herdr.1: the manual page"
