#!/usr/bin/env bash
# Builds the WebAssembly module build-wasm/wasm/shardpsi.{js,wasm}: the
# wasm32 OpenSSL and libsodium from wasm/deps.sh (cached outside the
# clone), then a meson cross build of psi/ and shard/ with Debian's emcc,
# single-threaded (-Dthreads=disabled).
#   wasm/build.sh [BUILD_DIR]     (default build-wasm; relative to the clone)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-wasm}
[[ $build == /* ]] || build=$PWD/$build   # a relative BUILD_DIR is relative to the clone
export NODE_PATH=/usr/share/nodejs   # emcc's optimiser needs acorn

prefix=$(bash wasm/deps.sh | tail -n 1)
[[ -f $prefix/openssl/lib/libcrypto.a && -f $prefix/sodium/lib/libsodium.a ]] ||
    { echo "wasm/build.sh: wasm/deps.sh gave no libraries under '$prefix'" >&2; exit 1; }

# pkg-config files and the cross file live beside the build directory:
# meson reads the cross file before the build directory exists.
cfg=$build.cfg
mkdir -p "$cfg/pkgconfig"
write_pc() { # NAME VERSION DIR LIB
    cat >"$cfg/pkgconfig/$1.pc" <<PC
prefix=$3
Name: $1
Description: $1 for wasm32 (wasm/deps.sh)
Version: $2
Libs: -L\${prefix}/lib -l$4
Cflags: -I\${prefix}/include
PC
}
write_pc libcrypto 3.0.22 "$prefix/openssl" crypto
write_pc libsodium 1.0.18 "$prefix/sodium" sodium
sed "s|@PKGCONFIG@|$cfg/pkgconfig|" wasm/emscripten.meson.in >"$cfg/emscripten.meson"

# P-256 multiplication: psi/p256.c (32-bit limbs, native 64-bit products in
# wasm) unless SHARDPSI_WASM_P256=openssl asks for OpenSSL's nistp256.
p256=${SHARDPSI_WASM_P256:-portable}
if [[ ! -f $build/build.ninja ]]; then
    meson setup "$build" --cross-file "$cfg/emscripten.meson" --buildtype=release \
        -Ddefault_library=static -Dthreads=disabled -Dtests=false -Dbench=false \
        -Dp256="$p256" >&2
elif ! grep -q "\"name\": \"p256\", \"value\": \"$p256\"" "$build/meson-info/intro-buildoptions.json" 2>/dev/null; then
    # Another value, or a directory from before the option existed.
    meson setup --reconfigure "$build" -Dp256="$p256" >&2
fi
ninja -C "$build" >&2
echo "$build/wasm"
