/* cuda_graph.h - what cuda_graph.c (the graphs: capture, instantiate,
 * replay, reset) shares with cuda_capture.c (the registry of captures
 * underway, the checks that refuse what cannot be captured, the capture
 * status of a stream) and cuda_blas.c (products recorded into a graph).
 * A CUDA build only. */
#ifndef PYGPU_CUDA_GRAPH_H
#define PYGPU_CUDA_GRAPH_H

#include "core/pygpu.h"

#include <cuda_runtime_api.h>

/* The device runtime's capture hooks (core/runtime.h's
 * pygpu_cuda_captures_underway, _capture_route and _capture_refuse, which
 * call these through the table). */
int pygpu_capture_underway(void);
uint64_t pygpu_capture_route(int device, void *stream);
int pygpu_capture_refuse(int device, void *stream, int kind,
                         const char *what);

/* The id of the capture sequence `stream` is part of, or 0 when it is not
 * capturing (or cannot be asked: the legacy default stream never is).
 * Clears any error of the query. */
unsigned long long pygpu_capture_stream_id(cudaStream_t stream);

/* Enter a capture just begun on `stream` of `device` (capture sequence
 * `id`, cudaStreamCaptureMode `mode`, by the calling thread) into the
 * registry: 0, or -1 with RuntimeError when too many are underway. */
int pygpu_capture_register(int device, cudaStream_t stream,
                           unsigned long long id, int mode);
/* Take capture `id` out of the registry.  Returns 1 when it was marked
 * invalidated (why it was is copied into why, n bytes at most), else 0. */
int pygpu_capture_unregister(unsigned long long id, char *why, size_t n);

/* Products (cuda_blas.c) recorded into captures so far, in the process:
 * a graph whose capture saw this count move replays ordered with the
 * cuBLAS workspace's other users. */
unsigned long pygpu_blas_captured_calls(void);
/* Before a capture on `stream` of `device` begins: when the device's
 * cuBLAS handles exist, bind them (and the workspace) to `stream` now,
 * ordered after their earlier users, so that the capture's products find
 * them bound.  Never fails (a failure leaves the binding to the first
 * product). */
void pygpu_blas_bind_for_capture(int device, cudaStream_t stream);

#endif /* PYGPU_CUDA_GRAPH_H */
