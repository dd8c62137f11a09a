/* Plugins that fail in each way the registry must report, one per BROKEN_* definition:
 *   BROKEN_NO_ENTRY     exports no polyinfer_backend_entry          -> missing symbol
 *   BROKEN_ABI          reports PI_ABI_VERSION + 1                  -> ABI mismatch
 *   BROKEN_CRASH        the probe raises SIGSEGV                    -> broken (crashed)
 *   BROKEN_HANG         the probe never returns                     -> broken (hung)
 *   BROKEN_UNUSABLE     the probe says no, with a reason            -> unusable
 *   BROKEN_MISSING_DEP  links a library that is not on its path     -> cannot load
 *   BROKEN_EXIT         the probe calls _exit(3)                    -> broken (no answer)
 * FAKE_NAME is the backend name the plugin gives. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "stub_vtable.h"

static int broken_probe(char* reason, size_t reason_len) {
#if defined(BROKEN_CRASH)
  (void)reason, (void)reason_len;
  raise(SIGSEGV);
  return 1;
#elif defined(BROKEN_HANG)
  (void)reason, (void)reason_len;
  for (;;) pause();
  return 0; /* not reached; C compilers still want it */
#elif defined(BROKEN_EXIT)
  (void)reason, (void)reason_len;
  _exit(3);
#elif defined(BROKEN_UNUSABLE)
  snprintf(reason, reason_len, "fake driver 0.9 is too old (need 1.0)");
  return 0;
#else
  (void)reason, (void)reason_len;
  return 1;
#endif
}

static int broken_device_count(void) {
  return 0;
}

static pi_status broken_device_info(int index, pi_device_info* out) {
  (void)index, (void)out;
  return PI_ERR_INVALID;
}

#if defined(BROKEN_ABI)
#define BROKEN_ABI_VERSION (PI_ABI_VERSION + 1)
#else
#define BROKEN_ABI_VERSION PI_ABI_VERSION
#endif

static const pi_backend_vtable kVtable = TEST_VTABLE(BROKEN_ABI_VERSION, FAKE_NAME, broken_probe,
                                                     broken_device_count, broken_device_info);

#if defined(BROKEN_MISSING_DEP)
int polyinfer_test_missing_dep(void); /* in libpi_test_missing_dep.so, absent at run time */
#endif

#if defined(BROKEN_NO_ENTRY)
/* The entry under a wrong name, as a plugin built against another header might have it. */
TEST_PLUGIN_EXPORT const pi_backend_vtable* polyinfer_backend_entry_v0(void) {
  return &kVtable;
}
#else
TEST_PLUGIN_EXPORT const pi_backend_vtable* polyinfer_backend_entry(void) {
#if defined(BROKEN_MISSING_DEP)
  if (polyinfer_test_missing_dep() != 0) return NULL;
#endif
  return &kVtable;
}
#endif
