/* Bare-metal tile firmware: prints from the tile and checks an Xipu intrinsic's header is there. */
#include <stdio.h>

#include "ipu.h"

int main(void) {
  printf("hello from tile %u of %u\n", ipu_tile_id(), ipu_tile_count());
  return 7;
}
