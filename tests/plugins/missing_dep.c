/* A library that the BROKEN_MISSING_DEP plugin links but cannot find at run time (it is
 * built away from the plugin and the plugin has no RPATH), like a GPU plugin on a machine
 * without the vendor's runtime library. */
__attribute__((visibility("default"))) int polyinfer_test_missing_dep(void) {
  return 0;
}
