// The CPU backend behind the plugin ABI. Built into the core (it is always
// there and always last in line), but reached only through its vtable, like
// every GPU plugin.
#pragma once
#include "polyinfer/backend/abi.h"

extern "C" const pi_backend_vtable* polyinfer_cpu_backend_entry(void);
