// Choosing the devices a run uses, from a BackendRegistry and a SelectionRequest.
//
//   BackendRegistry reg(RegistryOptions::from_environment());
//   Selection sel = select_devices(reg, selection_request(cli_layer));
//   for (const SelectedDevice& d : sel.devices) BackendDevice dev(*d.vtable, d.index, d.options);
//
// Rules (docs/BACKENDS.md):
//  * Each field takes the most specific source that sets it: command line > environment >
//    config file > default. An explicit choice is the first source that names devices or a
//    backend; within one source, devices win over backend (and must belong to it).
//  * Explicit devices: exactly those, in that order. Explicit backend: all its devices.
//    A choice that cannot be honoured (unknown name, plugin not usable, no such device index)
//    throws, listing what is available: there is no silent fall back to the CPU.
//  * auto (no explicit choice, or backend "auto"): backends in priority order (the named ones
//    first, the rest in default order; "cpu" ends the list), skipping disabled ones; every
//    GPU device of a usable backend, except one whose PCI bus id (or UUID) an earlier backend
//    already gave, CPU-kind devices (the cpu backend runs the host), and integrated or other
//    devices when a discrete GPU was found.
//  * The CPU device always comes last (moved there if named): it runs what the others cannot.
#pragma once
#include <string>
#include <vector>

#include "polyinfer/backend/abi.h"
#include "registry/backend_registry.hpp"
#include "registry/selection_request.hpp"

namespace polyinfer {

struct SelectedDevice {
  const pi_backend_vtable* vtable = nullptr;  // the backend, loaded until exit
  std::string backend;
  int index = 0;  // for vtable->device_open
  pi_device_info info{};
  std::string options;  // for vtable->device_open: the config file's options for this backend
  std::string text() const { return backend + ":" + std::to_string(index); }
};

struct Selection {
  std::vector<SelectedDevice> devices;  // most preferred first; cpu:0 last, always present
  std::vector<std::string> priority;    // the backend order used, cpu last
  std::vector<std::string> reasons;     // one line each: the rule applied, what was skipped, why
};

// Throws Error(kInvalidArgument) for a name no backend has, a device named twice, a device
// of another backend than the one chosen alongside it, or disabling cpu; Error(kUnsupported)
// for a backend that is not usable or has no devices, and a device index out of range.
Selection select_devices(const BackendRegistry& registry, const SelectionRequest& request);

// Device `index` of a usable backend, without options.
SelectedDevice selected_device(const BackendEntry& backend, int index);

// "cuda:0 (NVIDIA H200)".
std::string describe_device(const std::string& backend, int index, const pi_device_info& info);

}  // namespace polyinfer
