#!/usr/bin/env bash
# The system libraries tokenloop builds against, carried as Debian 12 packages for a machine
# that has none of the -dev packages, no pkg-config and no network (a lent GPU machine).
#
#   scripts/device-debs.sh unpack DEST   unpack scripts/device-debs/*.deb into DEST (no root,
#                                        no apt; dpkg-deb if present, else Python's standard
#                                        library), then configure with -DTL_DEPS_PREFIX=DEST
#   scripts/device-debs.sh fetch         download them again (here, with apt and a network)
#
# What is carried (about 1.2 MB, committed): headers and static archives of pcre2-8, utf8proc
# and ncursesw+tinfo (linked into the programs, nothing to find at run time), and cJSON's
# headers and shared library (Debian ships no libcjson.a; the build tree's RPATH finds
# DEST/usr/lib/x86_64-linux-gnu/libcjson.so.1). Every library needs glibc 2.34 or older.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
debs=$here/device-debs
pkgs="libcjson-dev libcjson1 libpcre2-dev libutf8proc-dev libncurses-dev"

case "${1:-}" in
fetch)
    cd "$debs"
    rm -f ./*.deb
    apt-get download $pkgs
    sha256sum ./*.deb | sed 's| \./| |' >SHA256SUMS
    ls -l
    ;;
unpack)
    dest=${2:?usage: device-debs.sh unpack DEST}
    mkdir -p "$dest"
    dest=$(cd "$dest" && pwd)
    (cd "$debs" && sha256sum -c --quiet SHA256SUMS) || { echo "device-debs: checksums differ" >&2; exit 1; }
    for f in "$debs"/*.deb; do
        if command -v dpkg-deb >/dev/null; then
            dpkg-deb -x "$f" "$dest"
        else
            python3 - "$f" "$dest" <<'PY'
# a .deb is an ar archive holding data.tar.{xz,gz,zst}; tarfile reads xz and gz
import io, sys, tarfile
path, dest = sys.argv[1:3]
data = open(path, "rb").read()
assert data[:8] == b"!<arch>\n", path
off = 8
while off < len(data):
    name = data[off:off + 16].decode().strip().rstrip("/")
    size = int(data[off + 48:off + 58].decode().strip())
    body = data[off + 60:off + 60 + size]
    off += 60 + size + (size & 1)
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(body)) as t:
            if hasattr(tarfile, "fully_trusted_filter"):   # our own packages: links as they are
                t.extractall(dest, filter="fully_trusted")
            else:
                t.extractall(dest)
        break
else:
    sys.exit(f"{path}: no data.tar member")
PY
        fi
    done
    # Links that point at the system (libtinfo.so -> /lib/x86_64-linux-gnu/libtinfo.so.6)
    # point into DEST instead, so nothing outside it is ever picked up.
    find "$dest" -type l | while read -r l; do
        t=$(readlink "$l")
        case "$t" in /*) ln -sfn "$dest$t" "$l" ;; esac
    done
    echo "$dest"
    ;;
*)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
