/* cuda_docs.h - the docstrings of the CUDA module functions, shared by
 * the CUDA build's table (cuda_runtime.c) and the CPU-only stand-ins
 * (cuda_none.c), so both flavours document the same signatures. */
#ifndef PYGPU_CUDA_DOCS_H
#define PYGPU_CUDA_DOCS_H

#define PYGPU_DOC_CUDA_GET_DEVICE_PROPERTIES \
    "_cuda_get_device_properties($module, device, /)\n--\n\n" \
    "A dict of the properties of CUDA device `device` (an int)."

#define PYGPU_DOC_CUDA_SET_DEVICE \
    "_cuda_set_device($module, device, /)\n--\n\n" \
    "Make CUDA device `device` (an int) current."

#define PYGPU_DOC_CUDA_CURRENT_DEVICE \
    "_cuda_current_device($module, /)\n--\n\n" \
    "The index of the current CUDA device."

#define PYGPU_DOC_CUDA_SYNCHRONIZE \
    "_cuda_synchronize($module, device, /)\n--\n\n" \
    "Wait for all work on CUDA device `device` (an int) to finish."

#define PYGPU_DOC_CUDA_MEM_GET_INFO \
    "_cuda_mem_get_info($module, device, /)\n--\n\n" \
    "(free, total) bytes of CUDA device `device` (an int)."

#define PYGPU_DOC_CUDA_VERSIONS \
    "_cuda_versions($module, /)\n--\n\n" \
    "{'built', 'runtime', 'driver'} CUDA versions (1000*major+10*minor)."
#define PYGPU_DOC_CUDA_LIBRARIES \
    "_cuda_libraries($module, /)\n--\n\n" \
    "{'cublas', 'cublasLt', 'error'}: the files cuBLAS and cuBLASLt were\n" \
    "loaded from (loading them now if need be; no GPU is needed), or None\n" \
    "with 'error' saying why not."

#endif
