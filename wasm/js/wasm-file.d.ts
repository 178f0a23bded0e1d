// The package export "shardpsi/dist/shardpsi.wasm" is a file, not a JavaScript module:
// resolve it to a URL and read or fetch it, e.g.
//   Node:  readFileSync(new URL(import.meta.resolve('shardpsi/dist/shardpsi.wasm')))
//   Vite:  import wasmUrl from 'shardpsi/dist/shardpsi.wasm?url'
// and hand the bytes or the URL to the loader ({ wasmBinary } or { wasmUrl }).  Importing it
// as a module gives nothing.
export {};
