// The order of one stable byte sort of 33-byte element slots, by the tests' own means: an
// oracle for the library's _SORT steps and merges (the package itself no longer offers a
// sort: every order is the library's plan's).
export function sortSlots(elements, wantPerm = false) {
  const n = elements.length / 33;
  const idx = Array.from({ length: n }, (_, i) => i);
  const at = (i) => elements.subarray(33 * i, 33 * i + 33);
  idx.sort((a, b) => {
    const x = at(a), y = at(b);
    for (let j = 0; j < 33; j++) if (x[j] !== y[j]) return x[j] - y[j];
    return a - b;
  });
  const out = new Uint8Array(elements.length);
  idx.forEach((i, j) => out.set(at(i), 33 * j));
  return { elements: out, perm: wantPerm ? Uint32Array.from(idx) : null };
}
