/* cuda_libfind.c - where a CUDA library is looked for, and the first of
 * those places that loads (the order is in cuda_libs.h).  Python-free. */
#define _GNU_SOURCE /* dladdr */
#include "cuda/cuda_libs.h"

#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append "<dir>/<rest>" to out unless it does not fit. */
static void
add(pygpu_lib_candidates *out, const char *dir, const char *rest)
{
    int n;

    if (out->n >= PYGPU_LIB_MAX_CANDIDATES) {
        return;
    }
    n = dir != NULL
            ? snprintf(out->path[out->n], PYGPU_LIB_PATH_MAX, "%s/%s", dir,
                       rest)
            : snprintf(out->path[out->n], PYGPU_LIB_PATH_MAX, "%s", rest);
    if (n > 0 && n < PYGPU_LIB_PATH_MAX) {
        out->n++;
    }
}

/* The folder holding the extension's package (site-packages, for a
 * regular install; resolved), or "" when unknown. */
static void
package_parent(char *dir, size_t size)
{
    Dl_info info;
    char *real = NULL;

    dir[0] = '\0';
    if (dladdr((void *)&pygpu_cuda_lib_candidates, &info) == 0 ||
        info.dli_fname == NULL) {
        return;
    }
    real = realpath(info.dli_fname, NULL);
    if (real != NULL) {
        snprintf(dir, size, "%s", dirname(dirname(real)));
    }
    free(real);
}

void
pygpu_cuda_lib_candidates(const char *soname, const char *const *pip_dirs,
                          int n_pip, pygpu_lib_candidates *out)
{
    static const char *const roots_env[] = {"CUDA_HOME", "CUDA_PATH"};
    char site[PYGPU_LIB_PATH_MAX], rest[PYGPU_LIB_PATH_MAX];

    out->n = 0;
    package_parent(site, sizeof(site));
    if (site[0] != '\0') {
        for (int i = 0; i < n_pip; i++) {
            snprintf(rest, sizeof(rest), "nvidia/%s/lib/%s", pip_dirs[i],
                     soname);
            add(out, site, rest);
        }
    }
    add(out, NULL, soname);
    for (size_t i = 0; i < sizeof(roots_env) / sizeof(roots_env[0]); i++) {
        const char *root = getenv(roots_env[i]);
        if (root != NULL && root[0] != '\0') {
            snprintf(rest, sizeof(rest), "lib64/%s", soname);
            add(out, root, rest);
            snprintf(rest, sizeof(rest), "lib/%s", soname);
            add(out, root, rest);
        }
    }
    snprintf(rest, sizeof(rest), "lib64/%s", soname);
    add(out, "/usr/local/cuda", rest);
}

void *
pygpu_cuda_lib_open(const pygpu_lib_candidates *c, char *why,
                    size_t why_size)
{
    for (int i = 0; i < c->n; i++) {
        void *h;
        const char *err;
        size_t used;

        (void)dlerror();
        h = dlopen(c->path[i], RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            return h;
        }
        err = dlerror();
        used = strlen(why);
        if (used + 1 < why_size) {
            /* glibc names the file in its reason. */
            snprintf(why + used, why_size - used, "; %s%s",
                     err != NULL ? "" : c->path[i],
                     err != NULL ? err : ": dlopen failed");
        }
    }
    return NULL;
}
