fn main() {
  napi_build::setup();
  // The WebAssembly build's threads notify the JavaScript thread through a word of the module's
  // memory (src/napi/signal.c).
  if std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|family| family.split(',').any(|family| family == "wasm")) {
    println!("cargo:rerun-if-changed=src/napi/signal.c");
    cc::Build::new().file("src/napi/signal.c").compile("zstd_pool_signal");
  }
}
