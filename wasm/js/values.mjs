// Pure JS parts of the low-level layer, needing no module instance: the
// error class, the packing of input values into one UTF-8 buffer, and byte
// argument checks.  Usable in the main thread of a worker pool as well.

export const PSI_E_INVALID_ARG = -1;
export const PSI_E_NOMEM = -2;

// The ciphersuites (PROTOCOL.md §16), by psi_suite id: names as psi_suite_name gives them.
// openmined-p256 (OpenMined PSI 2.0.6 / psi.js bytes) is the default; a message of the
// other two starts with a suite header and is refused by psi.js and by the other suites
// (PSI_E_SUITE_MISMATCH).
export const SUITES = Object.freeze(['openmined-p256', 'p256-sswu', 'ristretto255']);
export const DEFAULT_SUITE = SUITES[0];

// An error code of the library, with its name and message, and where the bad input was
// (psi_error_detail): detail = { field, index, offset }, each null when unknown (the field
// is a name such as "Request.encrypted_elements", index a 0-based element index within it,
// offset a byte offset in the message).  The message then starts with that place
// (psi_error_message), e.g. "Request.encrypted_elements[3]: invalid point: ...".
export class PsiError extends Error {
  constructor(code, message, codeName, func, detail) {
    super(message);
    this.code = code;
    this.codeName = codeName;
    this.name = codeName;
    if (func !== undefined) this.func = func;
    this.field = detail && typeof detail.field === 'string' ? detail.field : null;
    this.index = detail && Number.isInteger(detail.index) && detail.index >= 0 ? detail.index : null;
    this.offset = detail && Number.isInteger(detail.offset) && detail.offset >= 0 ? detail.offset : null;
  }
}

// ------------------------------------------------------------------ values

export const invalidArg = (message, func) => new PsiError(PSI_E_INVALID_ARG, message, 'PSI_E_INVALID_ARG', func);

// The UTF-8 length of s, or -1 where s holds a lone surrogate (not well-formed UTF-16).
function utf8Length(s) {
  let len = s.length;
  for (let j = 0; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c < 0x80) continue;
    if (c < 0x800) { len += 1; continue; }
    if (c < 0xd800 || c > 0xdfff) { len += 2; continue; }
    const d = c <= 0xdbff && j + 1 < s.length ? s.charCodeAt(j + 1) : 0;
    if (d < 0xdc00 || d > 0xdfff) return -1;
    len += 2; // two units, four bytes
    j++;
  }
  return len;
}

// Writes the UTF-8 of s (well-formed: utf8Length(s) >= 0) into out from `at`; returns the
// end.  Written out here rather than with TextEncoder: Chromium's encoder keeps a native
// copy of each string it is given for as long as the string lives, which grew the renderer
// by 176 MiB for 450,000 values against 26 MiB for a JavaScript loop (wasm/README.md).
function utf8Into(s, out, at) {
  for (let j = 0; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (c < 0x80) {
      out[at++] = c;
    } else if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6);
      out[at++] = 0x80 | (c & 0x3f);
    } else if (c < 0xd800 || c > 0xdfff) {
      out[at++] = 0xe0 | (c >> 12);
      out[at++] = 0x80 | ((c >> 6) & 0x3f);
      out[at++] = 0x80 | (c & 0x3f);
    } else {
      const p = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++j) - 0xdc00);
      out[at++] = 0xf0 | (p >> 18);
      out[at++] = 0x80 | ((p >> 12) & 0x3f);
      out[at++] = 0x80 | ((p >> 6) & 0x3f);
      out[at++] = 0x80 | (p & 0x3f);
    }
  }
  return at;
}

// Packs values (strings, encoded as UTF-8, or Uint8Arrays taken as bytes) into one
// buffer of their bytes' own size: { data, offsets } with value i = data[offsets[i] ..
// offsets[i + 1]).  A packed object is returned as it is.  A string holding a lone
// surrogate has no UTF-8 form and is refused (PsiError PSI_E_INVALID_ARG), never replaced
// by U+FFFD.
export function packValues(values, what = 'input') {
  if (values && values.data instanceof Uint8Array && values.offsets instanceof Uint32Array) return values;
  if (!Array.isArray(values)) throw new TypeError(`${what}s must be an array of strings`);
  const n = values.length;
  const offsets = new Uint32Array(n + 1);
  let size = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v === 'string') {
      const len = utf8Length(v);
      if (len < 0) {
        throw invalidArg(`${what} ${i} holds a lone surrogate (not well-formed UTF-16), so it has no ` +
          'UTF-8 encoding');
      }
      size += len;
    } else if (v instanceof Uint8Array) {
      size += v.length;
    } else {
      throw new TypeError(`${what} ${i} is not a string or a Uint8Array`);
    }
    if (size > 0xffffffff) throw new RangeError(`${what}s hold more than 4 GiB of bytes, past what a wasm32 heap holds`);
    offsets[i + 1] = size;
  }
  const data = new Uint8Array(size);
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v === 'string') utf8Into(v, data, offsets[i]);
    else data.set(v, offsets[i]);
  }
  return { data, offsets };
}

export const packedCount = (packed) => packed.offsets.length - 1;

// Bytes from a Uint8Array or an ArrayBuffer (not copied).
export function asBytes(x, what) {
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  throw new TypeError(`${what} must be a Uint8Array`);
}

// An array of size_t values (u32 on wasm32), checked rather than wrapped.
export function toU32(arr, what) {
  if (arr instanceof Uint32Array) return arr;
  const out = new Uint32Array(arr.length);
  for (let i = 0; i < arr.length; i++) {
    const v = arr[i];
    if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`${what}[${i}] is not a 32-bit index`);
    out[i] = v;
  }
  return out;
}
