#!/usr/bin/env bash
# macOS, checked by compilation: every C source of core, kernels/cpu, tui, serve and cli compiled
# for aarch64-macos and x86_64-macos with zig cc (PyPI ziglang, pinned; it carries macOS's libc
# headers), warnings as errors. The commands are the ones CMake exports for a macOS build
# (cmake/zig-macos.cmake), so the defines, include dirs, warning flags and per-file ISA flags
# (AVX sets for x86_64, NEON for arm64) are the build's own. The dependencies are Debian's headers
# (scripts/deps.sh installs them) found through .pc files written here under Homebrew's names.
# Nothing is run, and only libtokenloop_read (which needs no library from outside) is linked:
# there are no macOS builds of the dependencies here.
#   scripts/check-macos.sh [BUILD_DIR]      (default: build-check-macos in the checkout)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-check-macos}
zig_version=0.14.1
start=$(date +%s)

# --- zig, in .venv-zig ---------------------------------------------------------------------
venv=$root/.venv-zig
if [ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$zig_version" ]; then
  echo "check-macos: installing ziglang==$zig_version into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "ziglang==$zig_version"
fi
zig=$("$venv/bin/python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')

# --- the dependencies' headers ---------------------------------------------------------------
# The folder holds only these, so nothing else of /usr/include (glibc's headers) is seen.
headers=(cjson utf8proc.h pcre2.h microhttpd.h curses.h ncurses.h ncurses_dll.h unctrl.h ncursesw)
inc=$build/include
mkdir -p "$inc" "$build/pc"
for h in "${headers[@]}"; do
  [ -e "/usr/include/$h" ] || { echo "check-macos: /usr/include/$h missing: run scripts/deps.sh" >&2; exit 1; }
  ln -sfn "/usr/include/$h" "$inc/$h"
done
# Homebrew's module names; ncurses' configure adds _DARWIN_C_SOURCE on macOS (Debian's has
# _DEFAULT_SOURCE _XOPEN_SOURCE=600), cJSON's adds its own folder as Debian's does.
pc() {   # name cflags lib
  printf 'Name: %s\nDescription: %s headers for the macOS check\nVersion: 1\nCflags: %s\nLibs: -l%s\n' \
    "$1" "$1" "$2" "$3" >"$build/pc/$1.pc"
}
pc libcjson "-I$inc -I$inc/cjson" cjson
pc libpcre2-8 "-I$inc" pcre2-8
pc libutf8proc "-I$inc" utf8proc
pc ncursesw "-D_DARWIN_C_SOURCE -I$inc" ncursesw
pc libmicrohttpd "-I$inc" microhttpd

# --- one configure per architecture: its compile commands ----------------------------------
dirs='core|kernels/cpu|tui|serve|cli'
list=$build/commands
configure() {   # arch: writes $build/$arch.commands and $build/$arch.files
  local arch=$1 triple=${1/arm64/aarch64}-macos
  # Two spellings zig cc reads its own way, put in its terms: it hands clang a full feature list
  # that leaves evex512 off, so 512-bit vectors under -mavx512f or target("avx512f") fail (clang
  # alone implies it); and it takes -march for a CPU name ("unknown CPU: 'armv8.2'"): -march=armv8.N-a+X
  # becomes macOS's baseline CPU (Apple M1, as clang's default there, which has v8.5) plus X.
  { printf '#!/bin/sh\nzig=%s\ntriple=%s\n' "$zig" "$triple"; cat <<'EOF'
extra=
[ "$triple" = x86_64-macos ] && extra=-mevex512
for a; do
  shift
  case $a in
    -march=armv8.*-a+*) a="-mcpu=baseline+${a#*-a+}";;
  esac
  set -- "$@" "$a"
done
exec "$zig" cc -target "$triple" $extra "$@"
EOF
  } >"$build/cc-$arch"
  chmod +x "$build/cc-$arch"
  cmake -S "$root" -B "$build/$arch" -DCMAKE_TOOLCHAIN_FILE="$root/cmake/zig-macos.cmake" \
        -DTL_ZIG_CC="$build/cc-$arch" -DTL_MACOS_ARCH=$arch -DTL_MACOS_PC="$build/pc" \
        -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_BUILD_TYPE=Release -DTL_WERROR=ON -DTL_CUDA=OFF \
        >"$build/$arch.configure.log" 2>&1 ||
    { cat "$build/$arch.configure.log" >&2; return 1; }
  grep -q '/serve/server\.c"' "$build/$arch/compile_commands.json" ||
    { echo "check-macos: $arch: serve/ not configured (libmicrohttpd not found)" >&2; return 1; }
  # each command of a source under the five folders, its object sent to /dev/null, NUL-separated
  /usr/bin/python3 - "$build/$arch/compile_commands.json" "$root" "$dirs" "$arch" "$build" \
    >"$build/$arch.commands" <<'EOF'
import json, os, re, sys
cc, root, dirs, arch, build = sys.argv[1:]
want = re.compile(r"(%s)/[^/]+(/[^/]+)?\.c$" % dirs)
seen = set()
for e in json.load(open(cc)):
    rel = os.path.relpath(e["file"], root)
    if not want.fullmatch(rel) or rel in seen:
        continue
    seen.add(rel)
    cmd = re.sub(r" -o \S+", " -o /dev/null", e["command"])
    sys.stdout.write("%s\t%s\t%s\0" % (arch, rel, cmd))
with open(os.path.join(build, arch + ".files"), "w") as f:
    f.write("".join(s + "\n" for s in sorted(seen)))
EOF
}
# the two configures side by side (each mostly waits on one compiler check at a time)
configure arm64 & arm=$!
configure x86_64 & x86=$!
ok=1
wait $arm || ok=0
wait $x86 || ok=0
[ $ok = 1 ] || exit 1
cat "$build/arm64.commands" "$build/x86_64.commands" >"$list"

# Every source must be compiled for at least one of the two; those left out of one say why.
# (sort and comm in byte order, as Python's sorted wrote the .files)
export LC_ALL=C
every=$(cd "$root" && ls core/*.c core/*/*.c kernels/cpu/*.c tui/*.c serve/*.c cli/*.c | sort)
for arch in arm64 x86_64; do
  skipped=$(comm -23 <(echo "$every") "$build/$arch.files")
  [ -z "$skipped" ] || echo "check-macos: $arch skips (the build's own choice: other ISA) $(echo $skipped)"
done
never=$(comm -23 <(echo "$every") <(sort -u "$build/arm64.files" "$build/x86_64.files"))
[ -z "$never" ] || { echo "check-macos: never compiled for macOS: $never" >&2; exit 1; }
configured=$(date +%s)

# --- compile, two at a time; every failure is printed, then the script fails -----------------
n=$(tr -cd '\0' <"$list" | wc -c)
rc=0
# zig cc given -o /dev/null also leaves NAME.o in the folder it runs in: run it in the build's own
mkdir -p "$build/scratch"
cd "$build/scratch"
xargs -0 -P2 -n1 sh -c '
  arch=${1%%	*}; rest=${1#*	}; file=${rest%%	*}; cmd=${rest#*	}
  out=$(eval "$cmd" 2>&1) || { printf "check-macos: %s: %s failed\n%s\n" "$arch" "$file" "$out"; exit 1; }
  [ -z "$out" ] || { printf "check-macos: %s: %s printed\n%s\n" "$arch" "$file" "$out"; exit 1; }
' sh <"$list" || rc=1
# libtokenloop_read needs no library from outside, so it is linked too: macOS's linker refuses a
# dylib with an undefined symbol, which Linux's lets through to run time.
for arch in arm64 x86_64; do
  cmake --build "$build/$arch" --target tokenloop_read >"$build/$arch.link.log" 2>&1 ||
    { echo "check-macos: $arch: libtokenloop_read.dylib failed to link"; grep -v '^\[' "$build/$arch.link.log"; rc=1; }
done
end=$(date +%s)
if [ $rc -ne 0 ]; then
  echo "check-macos: FAILED ($n compiles, $((end - start)) s)" >&2
  exit 1
fi
echo "check-macos: $n compiles and 2 links for arm64 and x86_64 macOS passed with no warning in $((end - start)) s" \
     "($((configured - start)) s configuring)"
