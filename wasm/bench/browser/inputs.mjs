// The memory bench's input sets, one place for the page (memory-page.mjs) and for the peer
// that runs in the bench's own process (memory-browser.mjs): n server values and n client
// values, of which every other client value is the server's (n / 2 hits, rounded up).
export const serverValues = (n) => Array.from({ length: n }, (_, i) => `user-${i}@example.org`);
export const clientValues = (n) => Array.from({ length: n }, (_, i) => `user-${2 * i}@example.org`);
