/* compat.c - the two C23 names of glibc 2.38 that the emulator's wheel
 * links against, for older glibc (loaded globally before the wheel; on a
 * newer glibc, glibc's own come first). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

unsigned long long
__isoc23_strtoull(const char *s, char **end, int base)
{
    return strtoull(s, end, base);
}

int
__isoc23_sscanf(const char *s, const char *format, ...)
{
    va_list ap;
    int n;
    va_start(ap, format);
    n = vsscanf(s, format, ap);
    va_end(ap);
    return n;
}
