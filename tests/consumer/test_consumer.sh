#!/bin/sh
# Installs the library into a staging directory and builds and runs
# tests/consumer/consumer.c against it with nothing but pkg-config's flags,
# as an outside user would.
#
#   test_consumer.sh BUILD_DIR SCRATCH_DIR
#
# BUILD_DIR must already be built (`meson test` builds first; install runs
# with --no-rebuild so it never races the tests running beside it).
# SCRATCH_DIR/destdir is wiped and refilled.  The staged shardpsi.pc still
# names the real prefix, so prefix is redefined to the staged one.
# Exits non-zero with a message on the first failure.
set -eu

die() {
    echo "test_consumer: $*" >&2
    exit 1
}

[ $# -eq 2 ] || die "usage: $0 BUILD_DIR SCRATCH_DIR"
build=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$here/consumer.c
[ -f "$src" ] || die "missing $src"
[ -d "$build" ] || die "no build directory $build"
mkdir -p "$2" || die "cannot create $2"
scratch=$(cd "$2" && pwd)
destdir=$scratch/destdir
rm -rf "$destdir"

meson install -C "$build" --no-rebuild --destdir "$destdir" >"$scratch/install.log" 2>&1 \
    || { cat "$scratch/install.log" >&2; die "meson install failed"; }

pc=$(find "$destdir" -name shardpsi.pc -path '*/pkgconfig/*' | head -n 1)
[ -n "$pc" ] || die "no shardpsi.pc under $destdir"
pcdir=$(dirname "$pc")
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

prefix=$(pkg-config --variable=prefix shardpsi) || die "pkg-config cannot read $pc"
staged=$destdir$prefix
[ -d "$staged" ] || die "staged prefix $staged does not exist"
pcflags="--define-variable=prefix=$staged"
# shardpsi-shard requires shardpsi, so its flags carry both libraries.
cflags=$(pkg-config "$pcflags" --cflags shardpsi-shard) || die "pkg-config --cflags failed"
libs=$(pkg-config "$pcflags" --libs shardpsi-shard) || die "pkg-config --libs failed"
libdir=$(pkg-config "$pcflags" --variable=libdir shardpsi) || die "no libdir in $pc"
[ -f "$libdir/libshardpsi.so" ] || die "libshardpsi.so not installed in $libdir"
[ -f "$libdir/libshardpsi_shard.so" ] || die "libshardpsi_shard.so not installed in $libdir"
case "$cflags $libs" in
    *"$staged"*) ;;
    *) die "pkg-config flags do not point into the staging prefix: $cflags $libs" ;;
esac

exe=$scratch/consumer
# shellcheck disable=SC2086 # the flags are word lists
${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$exe" "$src" $cflags $libs \
    || die "compiling consumer.c against the installed library failed"

# The staged library, not a system-wide or build-tree copy, must be loaded.
if command -v ldd >/dev/null 2>&1; then
    loaded=$(LD_LIBRARY_PATH=$libdir ldd "$exe" | awk '/libshardpsi\.so/ { print $3 }')
    case "$loaded" in
        "$libdir"/*) ;;
        *) die "consumer loads libshardpsi from '$loaded', not from $libdir" ;;
    esac
fi

LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$exe" \
    || die "consumer failed (exit $?)"
echo "test_consumer: ok"
