// The sanitizers' default options, compiled into every program of a
// sanitizer build (CODEFY_SANITIZE): the test programs, `codefy` (the ranks
// the DDP tests start) and the fuzz targets carry them, so ctest, gtest's
// test discovery and a crash reproduced by hand all run alike. An
// environment variable (ASAN_OPTIONS, UBSAN_OPTIONS, LSAN_OPTIONS,
// TSAN_OPTIONS) still wins, option by option.
//
// Each suppressions file names the third-party code it silences and why;
// our own code is never suppressed.

#ifndef CODEFY_SANITIZER_DIR
#error "CODEFY_SANITIZER_DIR: the folder of the suppressions files"
#endif

extern "C" {

// allocator_may_return_null: a failed allocation returns null as glibc's
// malloc does, so LibTorch raises its "can't allocate memory" c10::Error,
// which the out-of-memory tests expect, instead of ASan aborting.
const char* __asan_default_options() {
  return "allocator_may_return_null=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1";
}

// halt_on_error: a finding fails the test (UBSan only prints by default).
const char* __ubsan_default_options() {
  return "print_stacktrace=1:halt_on_error=1:suppressions=" CODEFY_SANITIZER_DIR "/ubsan.supp";
}

const char* __lsan_default_options() { return "suppressions=" CODEFY_SANITIZER_DIR "/lsan.supp"; }

const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:suppressions=" CODEFY_SANITIZER_DIR "/tsan.supp";
}

}  // extern "C"
