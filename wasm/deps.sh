#!/usr/bin/env bash
# wasm/deps.sh - build (once) and cache the wasm32 dependencies of shardpsi:
#   OpenSSL 3.0.22 libcrypto.a and libsodium 1.0.18 libsodium.a, compiled with
#   Debian's emcc (emscripten 3.1.6), from Debian's source packages.
#
# Usage:  prefix=$(bash wasm/deps.sh | tail -1)
#         bash wasm/deps.sh --force      # rebuild even if the cache is complete
#
# Progress goes to stderr; the last line on stdout is the prefix:
#   $prefix/openssl/{lib/libcrypto.a,include/openssl/*.h}
#   $prefix/sodium/{lib/libsodium.a,include/sodium.h,include/sodium/*.h}
#
# Environment:
#   SHARDPSI_WASM_CACHE    cache root (default: $HOME/.cache/shardpsi-wasm)
#   SHARDPSI_WASM_REBUILD  1 = same as --force
#   SHARDPSI_WASM_JOBS     make -j value (default: 2)
#   SHARDPSI_WASM_KEEP     1 = keep the scratch build dir even on success
#
# Cache layout:
#   $CACHE/src/<tarballs>   verified sources (never downloaded twice)
#   $CACHE/<key>/           one finished build per recipe; <key> is a short hash
#                           of the recipe variables below plus `emcc --version`
#   $CACHE/<key>/.stamp     written last: a <key> dir without it is incomplete
#   $CACHE/build.XXXXXX/    scratch (removed on success, kept on failure)
set -euo pipefail

# Everything that is not the final answer goes to stderr; fd 3 is the real stdout.
exec 3>&1 1>&2

# ---------------------------------------------------------------- recipe ----
# Any change here changes the cache key and so triggers a rebuild.
RECIPE_REV=1
OPENSSL_VERSION=3.0.22
OPENSSL_TARBALL=openssl_${OPENSSL_VERSION}.orig.tar.gz
OPENSSL_SHA256=67ebca7e50d17383028045486653492195b83db95f8558709701bb47b5c1ef81
OPENSSL_TARGET=linux-generic32
OPENSSL_OPTS="no-asm no-threads no-shared no-pic no-dso no-module no-engine no-sock no-dgram no-ui-console no-tests \
no-afalgeng no-async no-autoload-config no-secure-memory no-ssl no-tls no-dtls no-srtp no-psk no-nextprotoneg \
no-ct no-ocsp no-cms no-cmp no-ts no-rfc3779 no-comp no-legacy no-des no-dh no-dsa no-idea no-md4 no-mdc2 \
no-rc2 no-rc4 no-rmd160 no-seed no-whirlpool no-cast no-bf no-camellia no-aria no-blake2 no-chacha no-poly1305 \
no-siphash no-siv no-ocb no-scrypt no-srp no-sm2 no-sm3 no-sm4 no-ec2m no-gost no-multiblock no-filenames \
enable-ec_nistp_64_gcc_128"
SODIUM_VERSION=1.0.18
SODIUM_TARBALL=libsodium_${SODIUM_VERSION}.orig.tar.gz
SODIUM_SHA256=d59323c6b712a1519a5daf710b68f5e7fde57040845ffec53850911f10a5d4f4
SODIUM_OPTS="--host=wasm32-unknown-emscripten --disable-shared --enable-static --without-pthreads \
--disable-ssp --disable-asm --disable-pie"
SODIUM_CFLAGS="-O3"
# ----------------------------------------------------------------------------

log() { printf '[wasm-deps] %s\n' "$*" >&2; }
die() { printf '[wasm-deps] ERROR: %s\n' "$*" >&2; exit 1; }

FORCE=${SHARDPSI_WASM_REBUILD:-0}
for arg in "$@"; do
  case $arg in
    --force|-f) FORCE=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) die "unknown argument: $arg (try --help)" ;;
  esac
done

JOBS=${SHARDPSI_WASM_JOBS:-2}
CACHE=${SHARDPSI_WASM_CACHE:-$HOME/.cache/shardpsi-wasm}
export NODE_PATH=/usr/share/nodejs     # emcc -O2/-O3 needs acorn from here
export DEBIAN_FRONTEND=noninteractive

# ----------------------------------------------------------- tools (apt) ----
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 && SUDO=(sudo) || SUDO=(false)
fi

# command -> Debian package
need=()
check_tool() { command -v "$1" >/dev/null 2>&1 || need+=("$2"); }
check_tool emcc emscripten
check_tool emconfigure emscripten
check_tool autoconf autoconf
check_tool automake automake
check_tool libtoolize libtool
check_tool node nodejs
check_tool make make
check_tool perl perl
check_tool flock util-linux
check_tool sha256sum coreutils
check_tool tar tar
check_tool gzip gzip
[ -e /usr/share/nodejs/acorn ] || need+=(node-acorn)
if [ ${#need[@]} -gt 0 ]; then
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  log "installing missing packages: ${need[*]}"
  [ "${SUDO[0]:-}" = false ] && die "not root and no sudo: please install ${need[*]}"
  "${SUDO[@]}" apt-get update -q >&2 || die "apt-get update failed"
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "${need[@]}" >&2 \
    || die "apt-get install ${need[*]} failed"
fi

# sed reads to the end: with head, emcc could die of SIGPIPE and pipefail
# turn a working emcc into a failure (seen here, intermittently)
EMCC_VERSION=$(emcc --version 2>/dev/null | sed -n 1p) || die "emcc --version failed"
[ -n "$EMCC_VERSION" ] || die "emcc --version printed nothing"

# ------------------------------------------------------------- cache key ----
KEY=$(printf '%s\n' "$RECIPE_REV" "$OPENSSL_VERSION" "$OPENSSL_SHA256" "$OPENSSL_TARGET" "$OPENSSL_OPTS" \
        "$SODIUM_VERSION" "$SODIUM_SHA256" "$SODIUM_OPTS" "$SODIUM_CFLAGS" "$EMCC_VERSION" \
      | sha256sum | cut -c1-12)
PREFIX=$CACHE/$KEY
STAMP=$PREFIX/.stamp

is_done() {
  [ -f "$STAMP" ] && [ -f "$PREFIX/openssl/lib/libcrypto.a" ] && [ -f "$PREFIX/sodium/lib/libsodium.a" ] \
    && [ -f "$PREFIX/openssl/include/openssl/opensslv.h" ] && [ -f "$PREFIX/sodium/include/sodium.h" ]
}

if [ "$FORCE" != 1 ] && is_done; then
  log "cached: $PREFIX"
  echo "$PREFIX" >&3
  exit 0
fi

mkdir -p "$CACHE/src" || die "cannot create cache dir $CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  log "another deps.sh holds $CACHE/.lock, waiting..."
  flock 9
fi
# Someone else may have finished the same build while we waited.
if [ "$FORCE" != 1 ] && is_done; then
  log "cached: $PREFIX"
  echo "$PREFIX" >&3
  exit 0
fi

T0=$(date +%s)
SCRATCH=$(mktemp -d "$CACHE/build.XXXXXX")
LOGFILE=$SCRATCH/build.log
ok=0
on_exit() {
  if [ "$ok" = 1 ]; then
    [ "${SHARDPSI_WASM_KEEP:-0}" = 1 ] || rm -rf "$SCRATCH"
  else
    if [ -s "$LOGFILE" ]; then
      log "---- last 40 lines of $LOGFILE ----"
      tail -n 40 "$LOGFILE" >&2 || true
    fi
    log "FAILED; scratch dir kept for inspection: $SCRATCH"
    [ -d "$PREFIX" ] && log "(the incomplete $PREFIX has no .stamp and will be rebuilt next time)"
  fi
}
trap on_exit EXIT

# run STEP-NAME CMD...: run with output in the log; time it.
run() {
  local name=$1; shift
  local t
  t=$(date +%s)
  log "$name ..."
  printf '\n==== %s: %s\n' "$name" "$*" >>"$LOGFILE"
  "$@" >>"$LOGFILE" 2>&1 || die "$name failed (exit $?), see $LOGFILE"
  log "$name done in $(( $(date +%s) - t )) s"
}

in_dir() ( cd "$1" && shift && "$@" )    # in_dir DIR CMD...: run CMD in DIR (subshell)

# --------------------------------------------------------------- sources ----
sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_sources() {
  local missing=()
  sha_ok "$CACHE/src/$OPENSSL_TARBALL" "$OPENSSL_SHA256" || missing+=(openssl)
  sha_ok "$CACHE/src/$SODIUM_TARBALL" "$SODIUM_SHA256" || missing+=(libsodium)
  [ ${#missing[@]} -eq 0 ] && { log "sources: cached in $CACHE/src"; return 0; }

  log "sources: downloading Debian source packages: ${missing[*]}"
  local s=$SCRATCH/apt
  mkdir -p "$s/lists/partial" "$s/dl"
  [ -r /etc/apt/sources.list.d/debian.sources ] || die "/etc/apt/sources.list.d/debian.sources not found"
  # Same archives as the system, but deb-src, with our own lists dir (never touches /etc/apt).
  sed 's/^Types:.*$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$s/debian-src.sources"
  local A=(-o "Dir::Etc::SourceList=$s/debian-src.sources" -o Dir::Etc::SourceParts=/dev/null
           -o "Dir::State::Lists=$s/lists" -o APT::Sandbox::User=root)
  run "apt-get update (deb-src)" apt-get "${A[@]}" update
  # openssl: exits 100 because the security .dsc/.debian.tar.xz answer 404, but the
  # orig tarball arrives; so judge by the tarballs and their sha256, not the exit status.
  printf '\n==== apt-get source --download-only %s\n' "${missing[*]}" >>"$LOGFILE"
  ( cd "$s/dl" && apt-get "${A[@]}" source --download-only "${missing[@]}" ) >>"$LOGFILE" 2>&1 \
    || log "apt-get source exited $? (expected for openssl: 404 on security .dsc/.diff); checking tarballs"
  local f want
  for f in "$OPENSSL_TARBALL:$OPENSSL_SHA256" "$SODIUM_TARBALL:$SODIUM_SHA256"; do
    want=${f#*:}; f=${f%%:*}
    sha_ok "$CACHE/src/$f" "$want" && continue
    [ -f "$s/dl/$f" ] || die "download failed: $f did not arrive (see $LOGFILE)"
    sha_ok "$s/dl/$f" "$want" \
      || die "sha256 mismatch for $f: got $(sha256sum "$s/dl/$f" | cut -d' ' -f1), pinned $want"
    mv -f "$s/dl/$f" "$CACHE/src/$f"
    log "sources: $f verified and cached"
  done
}

# --------------------------------------------------------------- builds -----
build_openssl() {
  local src=$SCRATCH/openssl-$OPENSSL_VERSION bld=$SCRATCH/ossl-wasm out=$PREFIX/openssl
  run "openssl: extract" tar -xzf "$CACHE/src/$OPENSSL_TARBALL" -C "$SCRATCH"
  [ -x "$src/Configure" ] || die "unexpected openssl tarball layout (no $src/Configure)"
  mkdir -p "$bld"
  # shellcheck disable=SC2086  # OPENSSL_OPTS is a word list
  run "openssl: Configure" in_dir "$bld" env CC=emcc AR=emar RANLIB=emranlib nice -n 19 "$src/Configure" "$OPENSSL_TARGET" $OPENSSL_OPTS
  run "openssl: make build_generated libcrypto.a" \
      nice -n 19 make -C "$bld" -j"$JOBS" build_generated libcrypto.a
  mkdir -p "$out/lib" "$out/include/openssl"
  cp "$bld/libcrypto.a" "$out/lib/"
  # public headers: the source tree's, then the generated ones (configuration.h, opensslv.h, ...)
  cp "$src"/include/openssl/*.h "$out/include/openssl/"
  cp "$bld"/include/openssl/*.h "$out/include/openssl/"
  cp "$src/LICENSE.txt" "$out/" 2>/dev/null || true
}

build_sodium() {
  local src=$SCRATCH/libsodium-$SODIUM_VERSION bld=$SCRATCH/sodium-wasm out=$PREFIX/sodium
  run "libsodium: extract" tar -xzf "$CACHE/src/$SODIUM_TARBALL" -C "$SCRATCH"
  [ -f "$src/autogen.sh" ] || die "unexpected libsodium tarball layout (no $src/autogen.sh)"
  run "libsodium: autogen.sh" in_dir "$src" env DO_NOT_UPDATE_CONFIG_SCRIPTS=1 nice -n 19 ./autogen.sh -s
  [ -x "$src/configure" ] || die "libsodium autogen.sh produced no configure"
  mkdir -p "$bld"
  # shellcheck disable=SC2086  # SODIUM_OPTS is a word list
  run "libsodium: emconfigure" in_dir "$bld" nice -n 19 emconfigure "$src/configure" \
      $SODIUM_OPTS --prefix="$out" CFLAGS="$SODIUM_CFLAGS"
  run "libsodium: make" nice -n 19 emmake make -C "$bld" -j"$JOBS"
  run "libsodium: make install" nice -n 19 emmake make -C "$bld" install
}

log "recipe key $KEY ($EMCC_VERSION)"
log "building into $PREFIX (scratch $SCRATCH, log $LOGFILE); takes ~4 min on 2 cores"
fetch_sources
rm -rf "$PREFIX"              # an unfinished or forced build: start clean
mkdir -p "$PREFIX"
build_openssl
build_sodium
for f in openssl/lib/libcrypto.a sodium/lib/libsodium.a openssl/include/openssl/opensslv.h sodium/include/sodium.h; do
  [ -f "$PREFIX/$f" ] || die "missing after build: $PREFIX/$f"
done
{
  echo "shardpsi wasm deps, recipe key $KEY (rev $RECIPE_REV)"
  echo "emcc: $EMCC_VERSION"
  echo "openssl $OPENSSL_VERSION sha256 $OPENSSL_SHA256"
  echo "  Configure $OPENSSL_TARGET $OPENSSL_OPTS"
  echo "libsodium $SODIUM_VERSION sha256 $SODIUM_SHA256"
  echo "  configure $SODIUM_OPTS CFLAGS=$SODIUM_CFLAGS"
} >"$PREFIX/recipe.txt"
cp "$LOGFILE" "$PREFIX/build.log"
# The stamp is written last: only now does this prefix count as finished.
echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(( $(date +%s) - T0 )) s" >"$STAMP.tmp"
mv -f "$STAMP.tmp" "$STAMP"
ok=1
log "done in $(( $(date +%s) - T0 )) s: $PREFIX"
echo "$PREFIX" >&3
