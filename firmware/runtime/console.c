/* picolibc glue: stdout and stderr write to the tile console (CSR ipu.console), which the
 * simulator prints line by line prefixed with tile and context; exit() ends the program. */
#include <stdio.h>
#include <stdlib.h>

#include "ipu.h"

static int console_put(char c, FILE *file) {
  (void)file;
  ipu_console_putc(c);
  return (unsigned char)c;
}

static FILE console = FDEV_SETUP_STREAM(console_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdout = &console;
FILE *const stderr = &console;

void _exit(int status) {
  ipu_exit(status);
}
