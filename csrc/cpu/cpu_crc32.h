/* cpu_crc32.h - the CRC-32 of zip and zlib (cpu_crc32.c). */
#ifndef PYGPU_CPU_CRC32_H
#define PYGPU_CPU_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32 of n bytes at p continuing crc, as zlib.crc32(data, crc):
 * carry-less multiplication where pygpu_cpu_crc32_fast(), else one bit
 * at a time (exact, and slow). */
uint32_t pygpu_cpu_crc32(uint32_t crc, const void *p, size_t n);

/* Nonzero when the CPU's carry-less multiply is used (the loops' capability
 * is AVX2 or more, PCLMULQDQ present). */
int pygpu_cpu_crc32_fast(void);

#endif /* PYGPU_CPU_CRC32_H */
