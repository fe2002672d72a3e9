// `twoplane` in browsers and bundlers: the WebAssembly build (the Node entry, index.node.js,
// prefers the native addon).
export * from './wasm.js';
export { default } from './wasm.js';
