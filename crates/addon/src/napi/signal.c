// The WebAssembly build's threads wake the JavaScript thread through these two words when it
// waits on them with `Atomics.waitAsync` (lib/workers.js; see workers.rs): a thread with work
// done sets the first and notifies its waiters, which stable Rust has no way to do (its
// `memory_atomic_notify` is unstable). Compiled for the WebAssembly build only (build.rs).
#include <stdint.h>

// [0]: set by a thread with work done, cleared by the JavaScript thread as it settles.
// [1]: set by the JavaScript thread while it waits on [0].
static int32_t words[2] __attribute__((aligned(8)));

// The words, for a view of them.
void *zstd_pool_signal_words(void) { return words; }

// Wakes the JavaScript thread if it waits on the words: 1 if so, else 0 (wake it another way).
int32_t zstd_pool_signal(void) {
  if (__atomic_load_n(&words[1], __ATOMIC_SEQ_CST) == 0) return 0;
  __atomic_store_n(&words[0], 1, __ATOMIC_SEQ_CST);
  __builtin_wasm_memory_atomic_notify(&words[0], UINT32_MAX);
  return 1;
}
