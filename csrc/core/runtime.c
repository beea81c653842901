/* runtime.c - the installed device runtime (see runtime.h). */
#include "core/pygpu.h"

/* Set once by cuda/'s init under the GIL, before anything can read it
 * (the module's init calls it right after pygpu_state_init, which refuses
 * a second initialisation in the process); read-only afterwards. */
const pygpu_device_runtime *pygpu_runtime = NULL;

void
pygpu_runtime_install(const pygpu_device_runtime *rt)
{
    pygpu_runtime = rt;
}
