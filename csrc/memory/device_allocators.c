/* device_allocators.c - the installed table of the devices' allocators
 * (see memory.h). */
#include "memory/memory.h"

/* Set once by cuda/'s init under the GIL, before anything can allocate
 * (the module's init calls it right after pygpu_state_init, which refuses
 * a second initialisation in the process); read-only afterwards. */
const pygpu_device_allocators *pygpu_allocators = NULL;

void
pygpu_allocators_install(const pygpu_device_allocators *al)
{
    pygpu_allocators = al;
}
