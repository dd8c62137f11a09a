/* polyinfer backend plugin ABI (C). The only thing a backend and the host share.
 *
 * Conventions (those of ggml, so GGUF shapes carry over unchanged):
 *  - A tensor has up to 4 dims; ne[0] is the innermost (contiguous) dim, nb[i]
 *    is the byte stride of dim i. For block types (Q4_0, ...) nb[0] is the
 *    block size in bytes and ne[0] must be a multiple of the block length.
 *  - Memory crosses the ABI as an opaque buffer handle plus a byte offset,
 *    never as a device pointer (Vulkan/OpenCL have no pointer arithmetic).
 *  - Work is a graph: an array of nodes run in order on one stream. A node's
 *    inputs are tensors written by earlier nodes or uploaded before submit.
 *  - Every function returning pi_status sets a message readable through
 *    last_error() on failure. Functions are not thread-safe per device.
 *  - Op semantics, shapes and tolerances: docs/OPS.md.
 */
#ifndef POLYINFER_BACKEND_ABI_H
#define POLYINFER_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change; the host refuses a plugin whose
 * vtable->abi_version differs. */
#define PI_ABI_VERSION 3u
/* Symbol every plugin exports: const pi_backend_vtable* polyinfer_backend_entry(void) */
#define PI_ENTRY_SYMBOL "polyinfer_backend_entry"

typedef enum pi_status {
  PI_OK = 0,
  PI_ERR_INVALID = 1,     /* bad argument or shape */
  PI_ERR_UNSUPPORTED = 2, /* op/type the device does not implement */
  PI_ERR_OUT_OF_MEMORY = 3,
  PI_ERR_DEVICE = 4, /* driver/runtime failure */
} pi_status;

typedef enum pi_op {
  PI_OP_GET_ROWS = 0, /* src0 table [K,R] any type, src1 I32 ids [n,b] -> F32 [K,n,b] */
  PI_OP_RMS_NORM,     /* src0 F32 [K,...] -> F32; f[0]=eps */
  PI_OP_NORM,         /* src0 F32 [K,...] -> F32 (x-mean)/sqrt(var+eps); f[0]=eps */
  PI_OP_MUL_MAT,      /* src0 W [K,N,B2,B3] any type, src1 F32 [K,M,B2',B3'] -> F32 [N,M,B2',B3'] */
  PI_OP_ADD,          /* src0 F32 [...] + src1 F32 broadcast (ne1[i] divides ne0[i]) */
  PI_OP_MUL,          /* src0 F32 [...] * src1 F32 broadcast */
  PI_OP_SCALE,        /* src0 F32 * f[0] */
  PI_OP_ROPE,         /* src0 F32 [D,H,T], src1 I32 pos [T], src2 opt F32 freq factors [n_rot/2];
                         i[0]=mode (0 normal: adjacent pairs, 2 NeoX: halves), i[1]=n_rot,
                         i[2]=n_ctx_orig; f[0]=freq_base f[1]=freq_scale f[2]=ext_factor
                         f[3]=attn_factor f[4]=beta_fast f[5]=beta_slow (YaRN, ggml semantics) */
  PI_OP_SOFT_MAX,   /* src0 F32 [n,rows...], src1 opt F32 mask [n,rows] -> softmax(f[0]*x + mask) */
  PI_OP_FLASH_ATTN, /* src0 q F32 [D,T,H], src1 k [D,KV,Hkv] F32/F16/Q8_0, src2 v same,
                       src3 opt mask F32 [KV,T] (0 or -inf); f[0]=scale; H % Hkv == 0 (GQA)
                       -> F32 [D,H,T] */
  PI_OP_SILU,       /* x * sigmoid(x) */
  PI_OP_GELU,       /* tanh approximation (ggml_gelu) */
  PI_OP_SWIGLU,     /* silu(src0) * src1 */
  PI_OP_CPY,        /* src0 -> dst, converting type (F32<->F16/BF16, F32->Q8_0); same ne */
  PI_OP_ARGMAX,     /* src0 F32 [n,rows] -> I32 [rows]; first index of the maximum */
  PI_OP_COUNT
} pi_op;

typedef struct pi_buffer_s* pi_buffer; /* opaque, owned by the backend */
typedef struct pi_device_s* pi_device; /* opaque, an opened device */
typedef struct pi_stream_s* pi_stream; /* opaque, an in-order queue on a device */

typedef struct pi_tensor {
  uint32_t type;  /* ggml type id (GGUF), e.g. 0 F32, 1 F16, 8 Q8_0, 26 I32 */
  int64_t ne[4];  /* elements per dim, unused dims = 1 */
  uint64_t nb[4]; /* byte strides */
  pi_buffer buffer;
  uint64_t offset; /* byte offset of element (0,0,0,0) in buffer */
} pi_tensor;

#define PI_MAX_SRC 4
typedef struct pi_node {
  uint32_t op; /* pi_op */
  uint32_t n_src;
  pi_tensor src[PI_MAX_SRC]; /* an optional input absent: buffer == NULL */
  pi_tensor dst;
  int32_t i[8];   /* integer op parameters (see pi_op) */
  float f[8];     /* float op parameters (see pi_op) */
  uint32_t flags; /* PI_NODE_* bits; a backend ignores bits it does not know */
} pi_node;

/* dst is read by later nodes of this graph only, not after it (as ggml's
 * intermediates, which no GGML_TENSOR_FLAG_OUTPUT marks): a backend that
 * computes every reader without it may leave it unwritten. */
#define PI_NODE_SCRATCH 1u

typedef struct pi_graph {
  const pi_node* nodes;
  uint32_t n_nodes;
} pi_graph;

typedef enum pi_device_kind {
  PI_DEVICE_CPU = 0,
  PI_DEVICE_GPU = 1,
  PI_DEVICE_IGPU = 2,
  PI_DEVICE_OTHER = 3
} pi_device_kind;

typedef struct pi_device_info {
  char name[128];
  char vendor[64];
  char driver_version[64];  /* e.g. "575.51" or "" */
  char compute_version[64]; /* e.g. "sm_90", "Vulkan 1.3", "AVX3_DL" for the CPU */
  char bus_id[32];          /* PCI "0000:65:00.0" or "" */
  uint8_t uuid[16];         /* all zero when unknown */
  uint32_t kind;            /* pi_device_kind */
  uint64_t memory_total;    /* bytes */
  uint64_t memory_free;     /* bytes */
  uint32_t host_visible;    /* 1: buffers are host memory (map() works) */
} pi_device_info;

typedef struct pi_backend_vtable {
  uint32_t abi_version; /* PI_ABI_VERSION the plugin was built with */
  const char* name;     /* "cpu", "cuda", "vulkan", ... */

  /* Cheap check that the runtime/driver works. Returns 1 usable, 0 not; on 0
   * writes a one-line reason into reason[reason_len]. */
  int (*probe)(char* reason, size_t reason_len);
  int (*device_count)(void);
  pi_status (*device_info)(int index, pi_device_info* out);
  /* options: "key=value;key=value" (e.g. "threads=8"), may be NULL. */
  pi_status (*device_open)(int index, const char* options, pi_device* out);
  void (*device_close)(pi_device dev);
  const char* (*last_error)(pi_device dev); /* dev may be NULL for open errors */

  pi_status (*buffer_alloc)(pi_device dev, uint64_t size, pi_buffer* out);
  /* Wrap caller-owned host memory (e.g. an mmapped GGUF) without copying; the
   * memory must outlive the buffer. PI_ERR_UNSUPPORTED where impossible. */
  pi_status (*buffer_wrap_host)(pi_device dev, void* ptr, uint64_t size, pi_buffer* out);
  void (*buffer_free)(pi_buffer buf);
  /* Host pointer of a host-visible buffer, NULL otherwise. */
  void* (*buffer_map)(pi_buffer buf);
  /* Ordered on stream s after earlier work; may return before the copy runs,
   * but the caller may reuse or free src as soon as it returns. */
  pi_status (*buffer_write)(pi_stream s, pi_buffer buf, uint64_t offset, const void* src,
                            uint64_t size);
  /* Returns once dst holds the bytes, after all earlier work on stream s. */
  pi_status (*buffer_read)(pi_stream s, pi_buffer buf, uint64_t offset, void* dst, uint64_t size);

  pi_status (*stream_create)(pi_device dev, pi_stream* out);
  void (*stream_destroy)(pi_stream s);
  pi_status (*stream_sync)(pi_stream s);

  /* 1 if the device runs this node (types and shapes as given), else 0.
   * Decides from op, types, shapes, strides and params only: the host asks
   * before any memory exists, with placeholder handles (non-NULL, never to be
   * dereferenced) for present tensors; an absent optional source is NULL. */
  int (*supports)(pi_device dev, const pi_node* node);
  /* Enqueue the graph on the stream; may return before it finishes. The
   * graph memory may be reused by the caller once this returns. */
  pi_status (*graph_submit)(pi_stream s, const pi_graph* graph);
  /* Optional (NULL where a backend has no host work worth doing ahead; then
   * the host calls graph_submit). The host work of submitting the graph
   * (checks, planning, cache lookups) done ahead, while the stream's earlier
   * work still runs: a decode step's next graph, prepared while the GPU runs
   * this one. Enqueues nothing and touches no buffer. The caller keeps
   * graph->nodes unchanged and alive until graph_submit_prepared or
   * graph_submit on s, which drop it; a second graph_prepare replaces it.
   * Fails as graph_submit would for a node the device cannot run. */
  pi_status (*graph_prepare)(pi_stream s, const pi_graph* graph);
  /* With graph_prepare: enqueues the graph of the last graph_prepare on s as
   * graph_submit would, ordered after everything enqueued on s before this
   * call (buffer_write of its inputs included). PI_ERR_INVALID when none is
   * prepared. */
  pi_status (*graph_submit_prepared)(pi_stream s);
} pi_backend_vtable;

typedef const pi_backend_vtable* (*pi_backend_entry_fn)(void);

/* The op's name as docs/OPS.md spells it ("FLASH_ATTN"), "unknown op" outside
 * the set: for messages, shared by the host and every plugin. */
static inline const char* pi_op_name(uint32_t op) {
  static const char* const names[PI_OP_COUNT] = {
      "GET_ROWS", "RMS_NORM",   "NORM", "MUL_MAT", "ADD",    "MUL", "SCALE", "ROPE",
      "SOFT_MAX", "FLASH_ATTN", "SILU", "GELU",    "SWIGLU", "CPY", "ARGMAX"};
  return op < PI_OP_COUNT ? names[op] : "unknown op";
}

#ifdef __cplusplus
}
#endif
#endif /* POLYINFER_BACKEND_ABI_H */
