/* cpu_malloc.c - how the C library's malloc keeps freed memory, set once
 * at import.
 *
 * CPU tensors get their memory from NumPy, that is from malloc.  glibc's
 * malloc serves a block above its mmap threshold (128 KiB at first) by
 * mmap and returns it with munmap; after such a block is freed it raises
 * the threshold to that block's size (up to 32 MiB) and the trim
 * threshold to twice that, and it gives the top of the heap back to the
 * system whenever more than the trim threshold lies free there.  A
 * training step frees its large temporaries (a convolution's columns,
 * their gradient) together at its end, which is more than twice the
 * largest of them: the heap's top goes back to the system, and the next
 * step faults every page in again and has the kernel zero it (a LeNet
 * conv2d forward and backward at batch 64 spent about half its time so).
 * So pygpu fixes the two thresholds where glibc's adaptation would end:
 * blocks up to 32 MiB come from the heap, and up to 128 MiB of free heap
 * top stays with the process.  Blocks above 32 MiB are mapped and
 * unmapped as before (NumPy asks for huge pages for them).  A program
 * that sets either threshold itself (MALLOC_MMAP_THRESHOLD_,
 * MALLOC_TRIM_THRESHOLD_ or GLIBC_TUNABLES in the environment) keeps its
 * own; other C libraries are left as they are.
 */
#include <stdlib.h>

#include "cpu/cpu_malloc.h"

#if defined(__GLIBC__)
#include <malloc.h>

#define MMAP_THRESHOLD (32 << 20)
#define TRIM_THRESHOLD (128 << 20)

void
pygpu_cpu_malloc_init(void)
{
    if (getenv("MALLOC_MMAP_THRESHOLD_") != NULL ||
        getenv("MALLOC_TRIM_THRESHOLD_") != NULL ||
        getenv("GLIBC_TUNABLES") != NULL) {
        return;
    }
    /* Both or neither: setting one alone stops glibc adapting the
     * other (the mmap threshold would stay at 128 KiB). */
    if (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1) {
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}
#else
void
pygpu_cpu_malloc_init(void)
{
}
#endif
