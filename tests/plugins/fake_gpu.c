/* A "GPU" that exists only in its own answers: probe says yes, and it reports one discrete
 * GPU (plus, with FAKE_WITH_IGPU, an integrated one). Built under several backend names and
 * directories (tests/plugins/CMakeLists.txt) to test search order, priority and dedupe.
 *
 * Compile definitions: FAKE_NAME backend name ("cuda"); FAKE_DEVICE device name;
 * FAKE_BUS_ID PCI bus id or ""; FAKE_UUID_BYTE fills the UUID when non-zero;
 * FAKE_WITH_IGPU adds device 1, an integrated GPU on bus 0000:00:02.0; FAKE_CHATTY prints a
 * driver banner on stdout from the probe, as some drivers do. */
#include <stdio.h>
#include <string.h>

#include "stub_vtable.h"

#ifndef FAKE_UUID_BYTE
#define FAKE_UUID_BYTE 0
#endif
#ifndef FAKE_WITH_IGPU
#define FAKE_WITH_IGPU 0
#endif
#ifndef FAKE_CHATTY
#define FAKE_CHATTY 0
#endif

static int fake_probe(char* reason, size_t reason_len) {
  (void)reason, (void)reason_len;
  if (FAKE_CHATTY) {
    printf("fake driver banner from %s\n", FAKE_NAME);
    fflush(stdout);
  }
  return 1;
}

static int fake_device_count(void) {
  return FAKE_WITH_IGPU ? 2 : 1;
}

static pi_status fake_device_info(int index, pi_device_info* out) {
  if (index < 0 || index >= fake_device_count() || out == NULL) return PI_ERR_INVALID;
  memset(out, 0, sizeof *out);
  snprintf(out->vendor, sizeof out->vendor, "polyinfer tests");
  snprintf(out->driver_version, sizeof out->driver_version, "1.0");
  if (index == 1) {
    snprintf(out->name, sizeof out->name, "Fake iGPU");
    snprintf(out->bus_id, sizeof out->bus_id, "0000:00:02.0");
    out->kind = PI_DEVICE_IGPU;
    out->memory_total = 1ull << 30;
    out->memory_free = 1ull << 29;
    return PI_OK;
  }
  snprintf(out->name, sizeof out->name, "%s", FAKE_DEVICE);
  snprintf(out->compute_version, sizeof out->compute_version, "fake 1.0");
  snprintf(out->bus_id, sizeof out->bus_id, "%s", FAKE_BUS_ID);
  memset(out->uuid, FAKE_UUID_BYTE, sizeof out->uuid);
  out->kind = PI_DEVICE_GPU;
  out->memory_total = 16ull << 30;
  out->memory_free = 15ull << 30;
  return PI_OK;
}

static const pi_backend_vtable kVtable =
    TEST_VTABLE(PI_ABI_VERSION, FAKE_NAME, fake_probe, fake_device_count, fake_device_info);

TEST_PLUGIN_EXPORT const pi_backend_vtable* polyinfer_backend_entry(void) {
  return &kVtable;
}
