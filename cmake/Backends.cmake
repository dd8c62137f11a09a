# Build switches for the GPU backends: POLYINFER_<NAME> = AUTO | ON | OFF.
#
# Where the value comes from: -DPOLYINFER_<NAME>=... (a preset counts as -D), else the
# environment variable POLYINFER_<NAME> at configure time, else AUTO. The cache entry stays
# empty until -D sets it, which is how the environment can still be consulted on a re-run.
# AUTO turns a backend on when its toolchain is found; ON with a missing toolchain stops
# configure naming what to install; OFF never builds it.
#
# Results, for the rest of the build:
#   POLYINFER_<NAME>_ENABLED   TRUE/FALSE
#   POLYINFER_ENABLED_BACKENDS lower-case names, e.g. "cuda;vulkan" (the registry reports
#                              them as compiled; see src/registry/compiled_backends.cpp)
#   ${CMAKE_BINARY_DIR}/backends.txt  the table printed at configure time and by the
#                              `show-backends` target.

set(POLYINFER_BACKEND_SWITCHES CUDA HIP VULKAN OPENCL SYCL METAL)

# What to install when a toolchain is missing (Debian/Ubuntu packages where they exist).
set(_pi_install_CUDA "nvidia-cuda-toolkit (Debian non-free), or cuda-toolkit from NVIDIA's apt repository")
set(_pi_install_HIP "hipcc and libamdhip64-dev (Debian/Ubuntu), or rocm-hip-sdk from AMD's ROCm repository")
set(_pi_install_VULKAN "libvulkan-dev and glslc")
set(_pi_install_OPENCL "opencl-headers and ocl-icd-opencl-dev")
set(_pi_install_SYCL "intel-oneapi-compiler-dpcpp-cpp from Intel's oneAPI apt repository, then source /opt/intel/oneapi/setvars.sh")
set(_pi_install_METAL "macOS with Xcode (the Apple SDK); Metal does not exist on Linux")

# _pi_switch_value(NAME OUT_VALUE OUT_SOURCE): the AUTO|ON|OFF value and where it came from.
function(_pi_switch_value name out_value out_source)
  set(var POLYINFER_${name})
  set(${var} "" CACHE STRING "Build the ${name} backend: AUTO (if its toolchain is found), ON, OFF; empty: environment, else AUTO")
  set_property(CACHE ${var} PROPERTY STRINGS "" AUTO ON OFF)
  if(NOT "${${var}}" STREQUAL "")
    set(value "${${var}}")
    set(source "-D${var}")
  elseif(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    set(value "$ENV{${var}}")
    set(source "environment ${var}")
  else()
    set(value AUTO)
    set(source "default")
  endif()
  string(TOUPPER "${value}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${var} is '${value}' (from ${source}); it must be AUTO, ON or OFF")
  endif()
  set(${out_value} ${value} PARENT_SCOPE)
  set(${out_source} "${source}" PARENT_SCOPE)
endfunction()

# Each _pi_find_<NAME>(OUT_FOUND OUT_WHY) looks for a toolchain without enabling a language,
# so configure stays fast and a found-but-unused toolchain costs nothing.
function(_pi_find_CUDA out_found out_why)
  find_program(POLYINFER_NVCC nvcc HINTS ENV CUDA_PATH PATHS /usr/local/cuda /opt/cuda PATH_SUFFIXES bin)
  if(POLYINFER_NVCC)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "nvcc at ${POLYINFER_NVCC}" PARENT_SCOPE)
  else()
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "nvcc not found (PATH, CUDA_PATH, /usr/local/cuda)" PARENT_SCOPE)
  endif()
endfunction()

function(_pi_find_HIP out_found out_why)
  find_program(POLYINFER_HIPCC hipcc HINTS ENV ROCM_PATH PATHS /opt/rocm PATH_SUFFIXES bin)
  if(POLYINFER_HIPCC)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "hipcc at ${POLYINFER_HIPCC}" PARENT_SCOPE)
  else()
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "hipcc not found (PATH, ROCM_PATH, /opt/rocm)" PARENT_SCOPE)
  endif()
endfunction()

function(_pi_find_VULKAN out_found out_why)
  find_package(Vulkan QUIET COMPONENTS glslc)
  if(Vulkan_FOUND)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "Vulkan ${Vulkan_VERSION} headers, glslc at ${Vulkan_GLSLC_EXECUTABLE}" PARENT_SCOPE)
    return()
  endif()
  set(${out_found} FALSE PARENT_SCOPE)
  if(NOT Vulkan_INCLUDE_DIR OR NOT Vulkan_LIBRARY)
    set(${out_why} "Vulkan headers or loader not found" PARENT_SCOPE)
  else()
    set(${out_why} "glslc not found" PARENT_SCOPE)
  endif()
endfunction()

function(_pi_find_OPENCL out_found out_why)
  find_package(OpenCL QUIET)
  if(OpenCL_FOUND)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "OpenCL ${OpenCL_VERSION_STRING} headers, ICD loader ${OpenCL_LIBRARY}" PARENT_SCOPE)
  else()
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "OpenCL headers or ICD loader not found" PARENT_SCOPE)
  endif()
endfunction()

function(_pi_find_SYCL out_found out_why)
  find_program(POLYINFER_ICPX icpx HINTS ENV ONEAPI_ROOT PATHS /opt/intel/oneapi
               PATH_SUFFIXES bin compiler/latest/bin)
  if(POLYINFER_ICPX)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "icpx at ${POLYINFER_ICPX}" PARENT_SCOPE)
  else()
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "icpx not found (PATH, ONEAPI_ROOT, /opt/intel/oneapi)" PARENT_SCOPE)
  endif()
endfunction()

function(_pi_find_METAL out_found out_why)
  if(APPLE)
    find_library(POLYINFER_METAL_FRAMEWORK Metal)
  endif()
  if(POLYINFER_METAL_FRAMEWORK)
    set(${out_found} TRUE PARENT_SCOPE)
    set(${out_why} "Metal framework at ${POLYINFER_METAL_FRAMEWORK}" PARENT_SCOPE)
  elseif(APPLE)
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "Metal framework not found in the Apple SDK" PARENT_SCOPE)
  else()
    set(${out_found} FALSE PARENT_SCOPE)
    set(${out_why} "needs macOS (the Apple SDK)" PARENT_SCOPE)
  endif()
endfunction()

# _pi_resolve_switch(NAME OUT_ON OUT_WHY): the decision for one backend.
function(_pi_resolve_switch name out_on out_why)
  _pi_switch_value(${name} value source)
  if(value STREQUAL "OFF")
    set(${out_on} FALSE PARENT_SCOPE)
    set(${out_why} "OFF (${source})" PARENT_SCOPE)
    return()
  endif()
  cmake_language(CALL _pi_find_${name} found why)
  if(value STREQUAL "ON" AND NOT found)
    message(FATAL_ERROR "POLYINFER_${name}=ON (${source}) but ${why}: install ${_pi_install_${name}}, "
                        "or set POLYINFER_${name}=AUTO or OFF (docs/BUILD_BACKENDS.md)")
  endif()
  # A toolchain alone builds nothing where polyinfer has no plugin for it yet.
  if(found AND NOT name IN_LIST POLYINFER_IMPLEMENTED_BACKENDS)
    string(TOLOWER ${name} lower)
    if(value STREQUAL "ON")
      message(FATAL_ERROR "POLYINFER_${name}=ON (${source}), but this version of polyinfer has "
                          "no ${lower} plugin yet (docs/BUILD_BACKENDS.md)")
    endif()
    set(${out_on} FALSE PARENT_SCOPE)
    set(${out_why} "${value} (${source}): ${why}, but no ${lower} plugin in this version yet"
        PARENT_SCOPE)
    return()
  endif()
  set(${out_on} ${found} PARENT_SCOPE)
  set(${out_why} "${value} (${source}): ${why}" PARENT_SCOPE)
endfunction()

# The backends that have a plugin in src/backends/.
set(POLYINFER_IMPLEMENTED_BACKENDS CUDA VULKAN)

# _pi_pad(TEXT WIDTH OUT): TEXT padded with spaces to WIDTH characters, for the table.
function(_pi_pad text width out)
  string(LENGTH "${text}" len)
  while(len LESS width)
    string(APPEND text " ")
    math(EXPR len "${len} + 1")
  endwhile()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

set(POLYINFER_ENABLED_BACKENDS "")
set(_pi_table "polyinfer backends (configure time; cpu is always built in)\n  backend  build  why\n")
foreach(_pi_name IN LISTS POLYINFER_BACKEND_SWITCHES)
  _pi_resolve_switch(${_pi_name} _pi_on _pi_why)
  set(POLYINFER_${_pi_name}_ENABLED ${_pi_on})
  string(TOLOWER ${_pi_name} _pi_lower)
  if(_pi_on)
    list(APPEND POLYINFER_ENABLED_BACKENDS ${_pi_lower})
    set(_pi_state on)
  else()
    set(_pi_state off)
  endif()
  _pi_pad("${_pi_lower}" 7 _pi_col1)
  _pi_pad("${_pi_state}" 5 _pi_col2)
  string(APPEND _pi_table "  ${_pi_col1}  ${_pi_col2}  ${_pi_why}\n")
endforeach()

file(WRITE ${CMAKE_BINARY_DIR}/backends.txt "${_pi_table}")
string(STRIP "${_pi_table}" _pi_table_text)
message(STATUS "${_pi_table_text}")
add_custom_target(show-backends
  COMMAND ${CMAKE_COMMAND} -E cat ${CMAKE_BINARY_DIR}/backends.txt
  COMMENT "" VERBATIM)
